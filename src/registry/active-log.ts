import { open, type FileHandle } from 'node:fs/promises';
import path from 'node:path';
import { TOOL_NAME_PATTERN } from '../contract/tool-name';
import { ToolFileFormatError } from './errors';
import type { ActiveEntry } from './types';

// The active pointers on disk are active.json (a whole snapshot at one generation) plus active.log (the changes made
// since, one JSON line each). A deployment appends one line, so what it writes does not grow with the number of
// tools; the writer folds the log into a new active.json once the log outgrows the snapshot, so the log stays bounded
// and the cost of rewriting the snapshot is spread over as many deployments as it has tools. Readers follow both:
// docs/tool-contract.md, "agent-tools/ on disk".

/** The log of changes since active.json, directly under the agent-tools directory. */
export const ACTIVE_LOG_FILE = 'active.log';

/**
 * One line of active.log: `name` moved to `version`/`contentHash` (or was removed: no version) at `generation`, on
 * top of the active.json of generation `base`. Lines of another base were left by a writer that died while folding the
 * log into active.json, and are ignored.
 */
export interface ActiveLogLine {
  base: number;
  generation: number;
  name: string;
  version?: number;
  contentHash?: string;
  /** ISO 8601, when the line was written. */
  at: string;
}

/** One line as written: JSON, then a newline (a line without one is a write that did not finish, and is skipped). */
export function formatLogLine(line: ActiveLogLine): string {
  return JSON.stringify(line) + '\n';
}

/**
 * What a reader knows of the index: the snapshot it read (identified by inode, mtime and size, so an unchanged
 * active.json is not parsed again), how far it read the log, and the pointers that result. Immutable: a read returns a
 * new state, so a reader whose later step fails can keep the one before.
 */
export interface ActiveIndexState {
  baseKey: string;
  baseGeneration: number;
  baseUpdatedAt: string;
  baseTools: ReadonlyMap<string, ActiveEntry>;
  /** Inode of the log read so far (undefined: none yet). */
  logIno: number | undefined;
  /** Bytes of the log consumed: always the end of a complete line. */
  logOffset: number;
  generation: number;
  updatedAt: string;
  tools: ReadonlyMap<string, ActiveEntry>;
}

/** A read's outcome: the state now, and the names whose pointer moved since the state given (`all`: read afresh). */
export interface ActiveIndexRead {
  state: ActiveIndexState | undefined;
  changed: ReadonlySet<string> | 'all';
}

/** Parses active.json's bytes (generation, updatedAt, tools). */
function parseActiveSnapshot(file: string, text: string): { generation: number; updatedAt: string; tools: Map<string, ActiveEntry> } {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (err) {
    throw new ToolFileFormatError(file, 'not valid JSON', { cause: err });
  }
  const index = raw as { generation?: unknown; updatedAt?: unknown; tools?: unknown };
  if (!Number.isSafeInteger(index.generation) || typeof index.tools !== 'object' || index.tools === null) {
    throw new ToolFileFormatError(file, 'expected {generation, updatedAt, tools}');
  }
  const tools = new Map<string, ActiveEntry>();
  for (const [name, entry] of Object.entries(index.tools as Record<string, Partial<ActiveEntry> | null>)) {
    if (!TOOL_NAME_PATTERN.test(name) || !Number.isSafeInteger(entry?.version) || typeof entry?.contentHash !== 'string') {
      throw new ToolFileFormatError(file, `bad entry for ${JSON.stringify(name)}`);
    }
    tools.set(name, { version: entry.version as number, contentHash: entry.contentHash });
  }
  return { generation: index.generation as number, updatedAt: String(index.updatedAt), tools };
}

async function openIfExists(file: string): Promise<FileHandle | undefined> {
  try {
    return await open(file, 'r');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
}

/**
 * Reads the active pointers of `dir`, starting from `previous`: active.json is parsed again only when it was replaced,
 * and the log only from where `previous` stopped, so following a change costs what the change wrote. Undefined state
 * when there is no active.json. Each file is read through one open handle, so a replacement under the read is seen
 * whole or not at all.
 * @throws ToolFileFormatError when a file is not what a writer writes.
 */
export async function readActiveIndexState(dir: string, previous?: ActiveIndexState): Promise<ActiveIndexRead> {
  const indexFile = path.join(dir, 'active.json');
  const logFile = path.join(dir, ACTIVE_LOG_FILE);
  const handle = await openIfExists(indexFile);
  if (!handle) return { state: undefined, changed: 'all' };
  let state: ActiveIndexState;
  let changed: Set<string> | 'all';
  try {
    const s = await handle.stat();
    const baseKey = `${s.ino}:${s.mtimeMs}:${s.size}`;
    if (previous && previous.baseKey === baseKey) {
      state = previous;
      changed = new Set();
    } else {
      const base = parseActiveSnapshot(indexFile, await handle.readFile('utf8'));
      state = {
        baseKey,
        baseGeneration: base.generation,
        baseUpdatedAt: base.updatedAt,
        baseTools: base.tools,
        logIno: undefined,
        logOffset: 0,
        generation: base.generation,
        updatedAt: base.updatedAt,
        tools: base.tools,
      };
      changed = 'all';
    }
  } finally {
    await handle.close();
  }

  const log = await openIfExists(logFile);
  if (!log) {
    // No log (an index written before logs existed, or one folded and not yet followed by its empty log): the
    // snapshot alone. A log read before and now gone means the pointers go back to the snapshot's.
    if (state.logIno !== undefined) {
      state = { ...state, logIno: undefined, logOffset: 0, generation: state.baseGeneration, updatedAt: state.baseUpdatedAt, tools: state.baseTools };
      changed = 'all';
    }
    return { state, changed };
  }
  try {
    const s = await log.stat();
    if (state.logIno !== s.ino) {
      // Another log than the one read so far (a fold replaced it): replayed from its start over the snapshot.
      if (state.logIno !== undefined) changed = 'all';
      state = { ...state, logIno: s.ino, logOffset: 0, generation: state.baseGeneration, updatedAt: state.baseUpdatedAt, tools: state.baseTools };
    }
    if (s.size <= state.logOffset) return { state, changed };
    const buffer = Buffer.alloc(s.size - state.logOffset);
    const { bytesRead } = await log.read(buffer, 0, buffer.length, state.logOffset);
    const text = buffer.subarray(0, bytesRead).toString('utf8');
    const end = text.lastIndexOf('\n');
    if (end < 0) return { state, changed };
    let tools: Map<string, ActiveEntry> | undefined;
    let { generation, updatedAt } = state;
    for (const raw of text.slice(0, end).split('\n')) {
      const line = parseLogLine(logFile, raw);
      if (line.base !== state.baseGeneration || line.generation <= generation) continue;
      tools ??= new Map(state.tools);
      if (line.version === undefined) tools.delete(line.name);
      else tools.set(line.name, { version: line.version, contentHash: line.contentHash as string });
      generation = line.generation;
      updatedAt = line.at;
      if (changed !== 'all') changed.add(line.name);
    }
    const logOffset = state.logOffset + Buffer.byteLength(text.slice(0, end + 1), 'utf8');
    state = { ...state, logOffset, generation, updatedAt, tools: tools ?? state.tools };
    return { state, changed };
  } finally {
    await log.close();
  }
}

function parseLogLine(file: string, raw: string): ActiveLogLine {
  let line: Partial<ActiveLogLine>;
  try {
    line = JSON.parse(raw) as Partial<ActiveLogLine>;
  } catch (err) {
    throw new ToolFileFormatError(file, 'a line is not valid JSON', { cause: err });
  }
  const removed = line.version === undefined && line.contentHash === undefined;
  if (
    !Number.isSafeInteger(line.base) ||
    !Number.isSafeInteger(line.generation) ||
    typeof line.name !== 'string' ||
    !TOOL_NAME_PATTERN.test(line.name) ||
    (!removed && (!Number.isSafeInteger(line.version) || typeof line.contentHash !== 'string'))
  ) {
    throw new ToolFileFormatError(file, `bad line ${JSON.stringify(raw.slice(0, 200))}`);
  }
  return line as ActiveLogLine;
}
