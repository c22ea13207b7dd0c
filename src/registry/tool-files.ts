import { mkdir, readFile, readdir, rm } from 'node:fs/promises';
import path from 'node:path';
import type { ToolVersion } from '../db';
import { TOOL_NAME_PATTERN } from '../contract/tool-name';
import { inputJsonSchemaOf } from './input-json-schema';
import { writeFileAtomic, writeFileOnce } from './atomic-file';
import { InvalidToolNameError, ToolFileConflictError, ToolFileFormatError } from './errors';
import type { ActiveIndex, ToolManifest } from './types';
import { PRIVATE_DIR_MODE } from '../contract/private-modes';
import { ACTIVE_LOG_FILE, readActiveIndexState } from './active-log';

// TOOL_NAME_PATTERN (the contract's one rule for tool names) is also what keeps every path below inside the
// agent-tools directory.

/** The file holding the active pointers, directly under the agent-tools directory. */
export const ACTIVE_INDEX_FILE = 'active.json';
/** Held (briefly) by whoever replaces active.json; the leading dot keeps it out of tool listings. */
export const ACTIVE_INDEX_LOCK_FILE = '.active.json.lock';

/** @throws InvalidToolNameError unless `name` is a valid tool name (so it cannot be `..`, contain `/`, etc.). */
export function assertToolName(name: unknown): asserts name is string {
  if (typeof name !== 'string' || !TOOL_NAME_PATTERN.test(name)) throw new InvalidToolNameError(name);
}

function assertVersion(name: string, version: number): void {
  if (!Number.isSafeInteger(version) || version < 1) {
    throw new ToolFileFormatError(name, `version ${version} is not a positive integer`);
  }
}

/** The three files of one version. */
export interface VersionPaths {
  source: string;
  compiled: string;
  manifest: string;
}

/** `<dir>/<name>/v<N>.ts|.mjs|.json`, after validating the name and version. */
export function versionPaths(dir: string, name: string, version: number): VersionPaths {
  assertToolName(name);
  assertVersion(name, version);
  const base = path.join(dir, name, `v${version}`);
  return { source: `${base}.ts`, compiled: `${base}.mjs`, manifest: `${base}.json` };
}

/** The contents of one version's files. */
export interface ToolVersionFiles {
  manifest: ToolManifest;
  sourceTs: string;
  compiledJs: string;
}

/**
 * Builds the files of a stored version. Deterministic (fixed key order, dates as ISO strings), so writing the same row
 * twice produces the same bytes, which is what makes a retried write a no-op rather than a conflict.
 */
export function filesFromRow(row: ToolVersion, extra: { inputJsonSchema?: unknown } = {}): ToolVersionFiles {
  // The sandbox's verdict, stored with the version, carries the schema the test run derived (src/sandbox/harness.cjs).
  extra = { ...inputJsonSchemaOf(row.verdict), ...extra };
  const manifest: ToolManifest = {
    name: row.name,
    version: row.version,
    contentHash: row.contentHash,
    description: row.description,
    createdAt: row.createdAt.toISOString(),
    workflowId: row.workflowId ?? null,
  };
  if (extra.inputJsonSchema !== undefined) manifest.inputJsonSchema = extra.inputJsonSchema;
  return { manifest, sourceTs: row.sourceTs, compiledJs: row.compiledJs };
}

/** Whether {@link writeToolVersionFiles} wrote anything. */
export interface WriteVersionResult {
  /** False when every file was already there with the same bytes (a retried activity). */
  created: boolean;
  paths: VersionPaths;
}

/**
 * Writes one version's files, each atomically and never over an existing one. The manifest goes last: a manifest on
 * disk means the source and the compiled module beside it are complete, and registries only look at manifests.
 * Idempotent: identical bytes already on disk are success.
 * @throws ToolFileConflictError when a file of this version exists with different bytes (versions are immutable).
 */
export async function writeToolVersionFiles(dir: string, files: ToolVersionFiles): Promise<WriteVersionResult> {
  const { name, version } = files.manifest;
  const paths = versionPaths(dir, name, version);
  await mkdir(path.join(dir, name), { recursive: true, mode: PRIVATE_DIR_MODE });
  let created = false;
  const steps: [string, string][] = [
    [paths.source, files.sourceTs],
    [paths.compiled, files.compiledJs],
    [paths.manifest, JSON.stringify(files.manifest, null, 2) + '\n'],
  ];
  for (const [file, data] of steps) {
    const { outcome } = await writeFileOnce(file, data);
    if (outcome === 'different' && !(file === paths.manifest && (await sameVersion(dir, files.manifest)))) {
      throw new ToolFileConflictError(file, name, version);
    }
    if (outcome === 'created') created = true;
  }
  return { created, paths };
}

/**
 * A manifest is descriptive: one written by another writer for the same content (say, a worker that materialised it
 * without the deployment's JSON Schema) is the same version, while source and module must match byte for byte.
 */
async function sameVersion(dir: string, manifest: ToolManifest): Promise<boolean> {
  const existing = await readManifest(dir, manifest.name, manifest.version).catch(() => undefined);
  return existing?.contentHash === manifest.contentHash;
}

/** Reads and checks one manifest; undefined when it does not exist. */
export async function readManifest(dir: string, name: string, version: number): Promise<ToolManifest | undefined> {
  const file = versionPaths(dir, name, version).manifest;
  const raw = await readJson(file);
  if (raw === undefined) return undefined;
  const m = raw as Partial<ToolManifest>;
  if (m.name !== name || m.version !== version || typeof m.contentHash !== 'string' || typeof m.description !== 'string') {
    throw new ToolFileFormatError(file, `not the manifest of ${name} v${version}`);
  }
  return {
    name,
    version,
    contentHash: m.contentHash,
    description: m.description,
    createdAt: String(m.createdAt),
    workflowId: typeof m.workflowId === 'string' ? m.workflowId : null,
    ...(m.inputJsonSchema !== undefined ? { inputJsonSchema: m.inputJsonSchema } : {}),
  };
}

/** The compiled ES module of one version. */
export function readCompiledJs(dir: string, name: string, version: number): Promise<string> {
  return readFile(versionPaths(dir, name, version).compiled, 'utf8');
}

/**
 * Reads the active pointers: active.json with the changes active.log adds to it (see src/registry/active-log.ts);
 * undefined when none was written yet. Reads everything: a reader that follows changes keeps an ActiveIndexState
 * (readActiveIndexState) and reads only what was appended since.
 */
export async function readActiveIndex(dir: string): Promise<ActiveIndex | undefined> {
  const { state } = await readActiveIndexState(dir);
  if (!state) return undefined;
  return { generation: state.generation, updatedAt: state.updatedAt, tools: Object.fromEntries(state.tools) };
}

/**
 * Replaces active.json atomically with the whole of `index`, then starts an empty active.log on top of it (log lines
 * of the snapshot before name another base, so a crash between the two leaves them ignored). It does not compare
 * generations: that is the caller's job (see `materializeActiveTools`, which does it under its lock).
 */
export async function writeActiveIndex(dir: string, index: ActiveIndex): Promise<void> {
  for (const name of Object.keys(index.tools)) assertToolName(name);
  await mkdir(dir, { recursive: true, mode: PRIVATE_DIR_MODE });
  const sorted = Object.fromEntries(Object.entries(index.tools).sort(([a], [b]) => (a < b ? -1 : 1)));
  await writeFileAtomic(path.join(dir, ACTIVE_INDEX_FILE), JSON.stringify({ ...index, tools: sorted }, null, 2) + '\n');
  await writeFileAtomic(path.join(dir, ACTIVE_LOG_FILE), '');
}

/** Names of the tool directories under `dir` (anything else there is ignored). */
export async function listToolDirectories(dir: string): Promise<string[]> {
  try {
    const entries = await readdir(dir, { withFileTypes: true });
    return entries
      .filter((e) => e.isDirectory() && TOOL_NAME_PATTERN.test(e.name))
      .map((e) => e.name)
      .sort();
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw err;
  }
}

/** Deletes a tool's directory with every version in it (for deleted tools only: versions are otherwise kept). */
export async function removeToolDirectory(dir: string, name: string): Promise<void> {
  assertToolName(name);
  await rm(path.join(dir, name), { recursive: true, force: true });
}

async function readJson(file: string): Promise<unknown> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
  try {
    return JSON.parse(text) as unknown;
  } catch (err) {
    throw new ToolFileFormatError(file, 'not valid JSON', { cause: err });
  }
}
