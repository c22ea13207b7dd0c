import { toolNameMessage } from '../contract/tool-name';

/** Thrown when a tool name would not be a safe directory name (the contract's TOOL_NAME_PATTERN). */
export class InvalidToolNameError extends Error {
  override readonly name = 'InvalidToolNameError';
  constructor(readonly tool: unknown) {
    const message = toolNameMessage(tool);
    super(`${message[0].toUpperCase()}${message.slice(1)}.`);
  }
}

/** Thrown when a version file already exists with different bytes: versions are immutable, so nothing is replaced. */
export class ToolFileConflictError extends Error {
  override readonly name = 'ToolFileConflictError';
  constructor(
    readonly path: string,
    readonly tool: string,
    readonly version: number,
  ) {
    super(`${path} already exists with different content; tool ${tool} version ${version} is immutable and was not rewritten.`);
  }
}

/** Thrown when active.json or a manifest cannot be read or does not have the expected shape. */
export class ToolFileFormatError extends Error {
  override readonly name = 'ToolFileFormatError';
  constructor(
    readonly path: string,
    reason: string,
    options?: { cause?: unknown },
  ) {
    super(`${path}: ${reason}`, options);
  }
}

/** Thrown by `ToolRegistry.open` when the first load fails (later reloads keep the old tools and retry instead). */
export class RegistryLoadError extends Error {
  override readonly name = 'RegistryLoadError';
  constructor(
    readonly source: string,
    options?: { cause?: unknown },
  ) {
    const why = options?.cause instanceof Error ? `: ${options.cause.message}` : '';
    super(`Cannot load the tool registry from ${source}${why}`, options);
  }
}

/** Thrown (as a rejection) by `ToolRegistry.waitFor` when the awaited state did not appear in time. */
export class RegistryWaitTimeoutError extends Error {
  override readonly name = 'RegistryWaitTimeoutError';
  constructor(
    readonly tool: string,
    readonly timeoutMs: number,
    /** The version the registry held when the wait gave up, if any. */
    readonly lastSeenVersion: number | undefined,
  ) {
    const seen = lastSeenVersion === undefined ? 'not loaded' : `v${lastSeenVersion}`;
    super(`Tool ${tool} did not reach the awaited state within ${timeoutMs} ms (last seen: ${seen}).`);
  }
}

/** Thrown (as a rejection) by `ToolRegistry.waitFor` when the registry is closed while a wait is pending. */
export class RegistryClosedError extends Error {
  override readonly name = 'RegistryClosedError';
  constructor() {
    super('The tool registry was closed.');
  }
}
