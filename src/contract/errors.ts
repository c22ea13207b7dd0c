/** The errors a client of Forge sees (the SDK, src/client.ts); the CLI maps them to exit codes. */

/** Thrown when a client method's input is invalid; nothing was started. `issues` name each bad field. */
export class ForgeInputError extends Error {
  override readonly name = 'ForgeInputError';
  constructor(
    message: string,
    readonly issues: { path: string[]; message: string }[],
  ) {
    super(message);
  }
}

/** Thrown when `getRun` names a workflow ID that Temporal does not know. */
export class RunNotFoundError extends Error {
  override readonly name = 'RunNotFoundError';
  constructor(
    readonly workflowId: string,
    options?: { cause?: unknown },
  ) {
    super(`no run with workflow ID ${JSON.stringify(workflowId)}`, options);
  }
}

/** Thrown when the Temporal service (or the database) cannot be reached at all; the CLI exits 3 on it. */
export class PlatformUnreachableError extends Error {
  override readonly name = 'PlatformUnreachableError';
  constructor(
    message: string,
    /** What was being reached, e.g. `localhost:7233` (never a secret). */
    readonly address: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/** Thrown when `forge reverify` finds no `forge-reverify` schedule: no platform has started against this Temporal. */
export class ScheduleMissingError extends Error {
  override readonly name = 'ScheduleMissingError';
  constructor(
    readonly scheduleId: string,
    options?: { cause?: unknown },
  ) {
    super(`there is no "${scheduleId}" schedule yet: it is created when the platform starts (forge up, or forge worker)`, options);
  }
}

/** Thrown when an environment variable Forge reads has a value it cannot use; `variable` names it. */
export class ConfigError extends Error {
  override readonly name = 'ConfigError';
  constructor(
    message: string,
    readonly variable: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}
