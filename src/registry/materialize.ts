import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, open, stat } from 'node:fs/promises';
import path from 'node:path';
import type { ActiveFingerprint, ToolStore, ToolVersion } from '../db';
import { mapLimit } from './map-limit';
import { Mutex } from './mutex';
import {
  ACTIVE_INDEX_FILE,
  ACTIVE_INDEX_LOCK_FILE,
  filesFromRow,
  listToolDirectories,
  readManifest,
  removeToolDirectory,
  writeActiveIndex,
  writeToolVersionFiles,
  versionPaths,
  type VersionPaths,
  type WriteVersionResult,
} from './tool-files';
import { ToolFileConflictError } from './errors';
import { withFileLock } from './file-lock';
import type { ActiveEntry, ActiveIndex } from './types';
import { PRIVATE_DIR_MODE, PRIVATE_FILE_MODE } from '../contract/private-modes';
import { TOOL_NAME_PATTERN } from '../contract/tool-name';
import { ACTIVE_LOG_FILE, formatLogLine, readActiveIndexState, type ActiveIndexState, type ActiveLogLine } from './active-log';

/**
 * Writes the files of one stored version under `dir` (source, compiled module, manifest last). The deploy activity
 * calls it right after the transaction that stores and activates the version, and before publishing active.json:
 * registries read the active pointers from active.json, so the files exist before any pointer they read names them.
 * Idempotent; throws ToolFileConflictError if different bytes already claim this version.
 */
export function writeToolVersion(dir: string, row: ToolVersion, options: { inputJsonSchema?: unknown } = {}): Promise<WriteVersionResult> {
  // Under the directory's lock, so that the cleanup of a deleted tool cannot remove files of a re-created one while
  // they are being written.
  const state = stateFor(dir);
  return state.lock.run(async () => {
    const written = await writeToolVersionFiles(dir, filesFromRow(row, options));
    // Written from the stored row itself: the publish that follows need not read the row again to check them, as long
    // as they are still the files written here (see filesFingerprint).
    state.written.set(`${row.name}@${row.version}`, await filesFingerprint(written.paths));
    return written;
  });
}

/**
 * Identifies the version's files as they are now: inode, change time (which no write or utimes by an ordinary process
 * can keep) and size of each. The same fingerprint later means nobody wrote, replaced or touched them in between.
 */
async function filesFingerprint(paths: VersionPaths): Promise<string> {
  const stats = await Promise.all([paths.source, paths.compiled, paths.manifest].map((file) => stat(file, { bigint: true })));
  return stats.map((s) => `${s.ino}:${s.ctimeNs}:${s.size}`).join('|');
}

/** Whether the version's files hold exactly the stored bytes `expected` hashes (false when one cannot be read). */
function holdsStoredBytes(paths: VersionPaths, manifestHash: string, expected: ActiveFingerprint): boolean {
  if (manifestHash !== expected.contentHash) return false;
  // Read synchronously: a few kilobytes each, and fs/promises' four round trips per file cost ~0.2 ms of this thread's
  // time apiece, seconds at 5,000 tools; a read here takes microseconds, and the caller's await on the manifest keeps
  // the event loop turning between tools.
  const sha256 = (file: string) => createHash('sha256').update(readFileSync(file)).digest('hex');
  try {
    return sha256(paths.source) === expected.sourceSha256 && sha256(paths.compiled) === expected.compiledSha256;
  } catch {
    return false;
  }
}

/** Whether the files of `key` are still exactly those writeToolVersion wrote from the stored row (and forgets them). */
async function stillAsWritten(state: DirectoryState, key: string, paths: VersionPaths): Promise<boolean> {
  const fingerprint = state.written.get(key);
  if (fingerprint === undefined) return false;
  state.written.delete(key);
  return (await filesFingerprint(paths).catch(() => undefined)) === fingerprint;
}

interface DirectoryState {
  /**
   * Every materialisation reads the database, writes files and active.json as one step under this lock, so the last
   * one to run also read the newest state.
   */
  lock: Mutex;
  /**
   * `name@version` → content hash of manifests already checked against the database by this process. Files are
   * immutable, so one check per version is enough; it catches an agent-tools directory left over from another
   * database whose version numbers mean other code.
   */
  verified: Map<string, string>;
  /**
   * `name@version` → fingerprint of the files writeToolVersion just wrote from the stored row: the publish that follows
   * counts them as checked without reading the row again if they are untouched since. Taken by that publish.
   */
  written: Map<string, string>;
  /**
   * The pointers on disk as this process last read or wrote them, so that publishing one change reads only what was
   * appended since (readActiveIndexState) instead of the whole index. Undefined until the first materialisation.
   */
  index?: ActiveIndexState;
}

const directories = new Map<string, DirectoryState>();
function stateFor(dir: string): DirectoryState {
  const key = path.resolve(dir);
  let state = directories.get(key);
  if (!state) directories.set(key, (state = { lock: new Mutex(), verified: new Map(), written: new Map() }));
  return state;
}

/**
 * Brings `dir` in line with the database's active pointers: first makes sure every active version's files exist
 * (writing missing ones from the stored rows; this is how a worker on another host materialises agent-tools/), then
 * replaces active.json, so no registry ever reads a pointer to a file that is not there; then removes the directories of
 * tools that are neither active nor stored any more (deleted tools). Returns the index now on disk.
 *
 * Generations only increase: the new one is the newest event id, or one more than the current file's if that is not
 * higher (a transaction with a lower event id may commit after one with a higher id), and active.json is not rewritten
 * when neither pointers nor events moved. Calls in one process are serialised per directory; the current generation is
 * re-read right before the rename, so an older materialisation never replaces a newer file.
 */
export function materializeActiveTools(store: ToolStore, dir: string): Promise<ActiveIndex> {
  const state = stateFor(dir);
  return state.lock.run(() => materializeLocked(store, dir, state));
}

/**
 * How often one materialisation writes again after finding files it named gone: a deletion (rm -rf of agent-tools/)
 * that raced it. Past that the call fails and its caller's next attempt (the next look of rebuildWhenLost, the next
 * change) tries again.
 */
const MAX_PASSES = 5;

/** Versions whose files one materialisation checks at once. */
const FILE_CHECKS_AT_ONCE = 16;

async function materializeLocked(store: ToolStore, dir: string, state: DirectoryState): Promise<ActiveIndex> {
  const { verified } = state;
  for (let pass = 1; ; pass++) {
    const { index, tools } = await materializePass(store, dir, state);
    // A look at a file is a moment's truth only: a deletion running beside this call (another process, or one that
    // blocked this process while a read was in flight) can take away a file it saw, or had just written, before
    // active.json names it. So the files are looked at once more after active.json is in place, and whatever is
    // missing is written again, with active.json, until what it names is all there.
    const missing = missingVersions(dir, tools);
    if (missing.length === 0) {
      await removeDeletedTools(store, dir, index);
      return index;
    }
    for (const key of missing) verified.delete(key);
    if (pass >= MAX_PASSES) {
      throw new Error(`agent-tools/ at ${dir} keeps losing files while it is written (${missing.join(', ')} missing after ${pass} passes)`);
    }
  }
}

/** One pass: every active version's files, then active.json. Returns the index on disk and what it was built from. */
async function materializePass(store: ToolStore, dir: string, state: DirectoryState): Promise<{ index: ActiveIndex; tools: Record<string, ActiveEntry> }> {
  // The event id is read before the pointers, so the pointers are at least as new as the generation they get.
  const [newest] = await store.listEvents({ limit: 1 });
  const eventId = newest?.id ?? 0;
  // With the hashes of what each active version's files must hold: files already there are checked by hashing them, not
  // by reading every stored row (a worker's start with 1,000 tools spent ~6 s on those reads).
  const pointers = await store.listActiveFingerprints();

  const tools: Record<string, ActiveEntry> = {};
  // Several tools at once: each is a few file-system round trips, and versions are files of their own.
  const entries = await mapLimit(pointers, FILE_CHECKS_AT_ONCE, (p) => ensureVersionFiles(store, dir, state, p.name, p.version, p));
  pointers.forEach((pointer, i) => {
    // Undefined when removed since the pointers were read: its removal notified, and the materialisation that follows drops it.
    const entry = entries[i];
    if (entry) tools[pointer.name] = entry;
  });

  return { index: await replaceIndex(dir, eventId, tools, state), tools };
}

/**
 * `name@version` of every version in `tools` with a file missing on disk now. Synchronous: a look at a name is
 * microseconds, and fs/promises' access() cost ~0.1 ms of this thread a file (15,000 files at 5,000 tools).
 */
function missingVersions(dir: string, tools: Record<string, ActiveEntry>): string[] {
  const missing: string[] = [];
  for (const [name, entry] of Object.entries(tools)) {
    const paths = versionPaths(dir, name, entry.version);
    if (![paths.source, paths.compiled, paths.manifest].every((file) => existsSync(file))) missing.push(`${name}@${entry.version}`);
  }
  return missing;
}

/**
 * Writes active.json (and an empty log after it) unless nothing moved, never with a generation at or below the one on
 * disk. The whole index: for a materialisation from scratch (a worker's start, a lost directory, a lost listener);
 * a single change is appended by {@link publishToolChanges}.
 */
async function replaceIndex(dir: string, eventId: number, tools: Record<string, ActiveEntry>, state: DirectoryState): Promise<ActiveIndex> {
  const current = await readActiveIndexState(dir, state.index);
  if (current.state && eventId <= current.state.generation && sameTools(current.state.tools, tools)) {
    state.index = current.state;
    return indexOf(current.state);
  }
  const generation = Math.max(eventId, (current.state?.generation ?? -1) + 1);
  // Another process sharing the directory (a second worker on this host) may write too: the look at what is there
  // and the replacement are one step under a lock file, so active.json never goes back past what it wrote.
  await mkdir(dir, { recursive: true, mode: PRIVATE_DIR_MODE });
  return withFileLock(path.join(dir, ACTIVE_INDEX_LOCK_FILE), async () => {
    const latest = await readActiveIndexState(dir, current.state);
    if (latest.state && latest.state.generation >= generation) {
      state.index = latest.state;
      return indexOf(latest.state);
    }
    const next: ActiveIndex = { generation, updatedAt: new Date().toISOString(), tools };
    await writeActiveIndex(dir, next);
    state.index = (await readActiveIndexState(dir)).state;
    return next;
  });
}

/** The record form of a state (O(tools): for the materialisation from scratch and for tests, not per change). */
function indexOf(state: ActiveIndexState): ActiveIndex {
  return { generation: state.generation, updatedAt: state.updatedAt, tools: Object.fromEntries(state.tools) };
}

/**
 * The log is folded into a new active.json once it is larger than this and than active.json itself: the log stays
 * bounded, and rewriting the snapshot (bytes ∝ tools) happens once per as many changes as the snapshot has tools.
 */
const FOLD_MIN_BYTES = 64 * 1024;

/** What one {@link publishToolChanges} did. */
export interface PublishChangesResult {
  generation: number;
  /** Active tools now on disk. */
  tools: number;
  /** Lines appended to active.log (0: the index already said so). */
  appended: number;
  /** The log was folded into a new active.json. */
  folded: boolean;
  /** Nothing was known of the directory yet (or its index was lost), so the whole of it was materialised. */
  full: boolean;
}

/**
 * Brings the pointers of `names` on disk in line with the database, touching only those tools: each one's version
 * files are written if missing, then one line per moved pointer is appended to active.log. What it reads and writes
 * does not grow with the number of tools (the index as this process last saw it is kept, and only what was appended
 * since is read), except when it folds the log into active.json, which it does once per as many changes as there are
 * tools. Falls back to {@link materializeActiveTools} when this process has not materialised `dir` yet or its index
 * was lost. Same guarantees: files before pointers, generations only increase, a crash at any instant leaves either
 * the old pointers or the new (a torn last line is cut off by the next writer and skipped by readers). Idempotent.
 */
export function publishToolChanges(store: ToolStore, dir: string, names: readonly string[]): Promise<PublishChangesResult> {
  const state = stateFor(dir);
  return state.lock.run(async () => {
    const full = async (): Promise<PublishChangesResult> => {
      const index = await materializeLocked(store, dir, state);
      return { generation: index.generation, tools: Object.keys(index.tools).length, appended: 0, folded: false, full: true };
    };
    if (!state.index) return full();
    const wanted = [...new Set(names)].filter((n) => TOOL_NAME_PATTERN.test(n)).sort();
    for (let pass = 1; ; pass++) {
      const outcome = await appendChanges(store, dir, state, wanted);
      if (outcome === 'lost') return full();
      const missing = missingVersions(dir, outcome.entries);
      if (missing.length === 0) {
        for (const name of outcome.removed) {
          if ((await store.listVersions(name)).length === 0) await removeToolDirectory(dir, name);
        }
        const { generation, tools } = state.index as ActiveIndexState;
        return { generation, tools: tools.size, appended: outcome.appended, folded: outcome.folded, full: false };
      }
      // A deletion raced this call: the files are written again (the pointers already name them).
      for (const key of missing) state.verified.delete(key);
      for (const [name, entry] of Object.entries(outcome.entries)) await ensureVersionFiles(store, dir, state, name, entry.version);
      if (pass >= MAX_PASSES) {
        throw new Error(`agent-tools/ at ${dir} keeps losing files while it is written (${missing.join(', ')} missing after ${pass} passes)`);
      }
    }
  });
}

/**
 * Makes sure the files of `name` v`version` are on disk and match the database; undefined when the row is gone. Checked
 * against the row once per version and process (files are immutable); a version this process has just written from
 * its row counts as checked while its files are untouched since.
 */
async function ensureVersionFiles(
  store: ToolStore,
  dir: string,
  state: DirectoryState,
  name: string,
  version: number,
  expected?: ActiveFingerprint,
): Promise<ActiveEntry | undefined> {
  const key = `${name}@${version}`;
  const { verified } = state;
  const manifest = await readManifest(dir, name, version);
  if (manifest && verified.get(key) === manifest.contentHash) return { version, contentHash: manifest.contentHash };
  const paths = versionPaths(dir, name, version);
  if (manifest && ((await stillAsWritten(state, key, paths)) || (expected && holdsStoredBytes(paths, manifest.contentHash, expected)))) {
    verified.set(key, manifest.contentHash);
    return { version, contentHash: manifest.contentHash };
  }
  const row = await store.getVersion(name, version);
  if (!row) return undefined;
  if (manifest && manifest.contentHash !== row.contentHash) throw new ToolFileConflictError(paths.manifest, row.name, row.version);
  // Written whether or not the manifest was there: writeToolVersionFiles leaves identical files alone and creates
  // whichever of the three is missing, so a version a deletion took half of is made whole again.
  await writeToolVersionFiles(dir, filesFromRow(row));
  verified.set(key, row.contentHash);
  return { version, contentHash: row.contentHash };
}

/**
 * Under the directory's lock file: reads the newest event id and the pointers of `names` (inside the lock, so the last
 * writer also read last, and a slower writer can never put back an older pointer), and appends what moved.
 */
async function appendChanges(
  store: ToolStore,
  dir: string,
  state: DirectoryState,
  names: string[],
): Promise<'lost' | { entries: Record<string, ActiveEntry>; removed: string[]; appended: number; folded: boolean }> {
  await mkdir(dir, { recursive: true, mode: PRIVATE_DIR_MODE });
  return withFileLock(path.join(dir, ACTIVE_INDEX_LOCK_FILE), async () => {
    const known = state.index as ActiveIndexState;
    const read = await readActiveIndexState(dir, known);
    // No active.json, or the log this process was following is gone while the snapshot stayed: pointers on disk went
    // back, and only a materialisation from scratch puts every one of them right.
    const lostLog = read.state?.baseKey === known.baseKey && known.logIno !== undefined && read.state.logIno !== known.logIno;
    if (!read.state || lostLog) return 'lost' as const;
    const current = read.state;
    const { newestEventId, active } = await store.getActivePointers(names);
    const entries: Record<string, ActiveEntry> = {};
    const removed: string[] = [];
    const lines: ActiveLogLine[] = [];
    let generation = Math.max(newestEventId, current.generation + 1);
    const at = new Date().toISOString();
    for (const name of names) {
      const version = active.get(name);
      const entry = version !== undefined ? await ensureVersionFiles(store, dir, state, name, version) : undefined;
      const onDisk = current.tools.get(name);
      if (entry) entries[name] = entry;
      else removed.push(name);
      if (entry ? onDisk?.version === entry.version && onDisk.contentHash === entry.contentHash : onDisk === undefined) continue;
      lines.push({ base: current.baseGeneration, generation: generation++, name, ...(entry ?? {}), at });
    }
    if (lines.length === 0) {
      state.index = current;
      return { entries, removed, appended: 0, folded: false };
    }
    const logBytes = await appendLogLines(dir, current, lines);
    let folded = false;
    const snapshotBytes = await stat(path.join(dir, ACTIVE_INDEX_FILE)).then((s) => s.size);
    let next = (await readActiveIndexState(dir, current)).state as ActiveIndexState;
    if (logBytes > Math.max(FOLD_MIN_BYTES, snapshotBytes)) {
      await writeActiveIndex(dir, indexOf(next));
      next = (await readActiveIndexState(dir, next)).state as ActiveIndexState;
      folded = true;
    }
    state.index = next;
    return { entries, removed, appended: lines.length, folded };
  });
}

/**
 * Appends `lines` to active.log right after the last complete line `current` read (cutting off a torn line a killed
 * writer left), and makes them durable. Returns the log's size after.
 */
async function appendLogLines(dir: string, current: ActiveIndexState, lines: ActiveLogLine[]): Promise<number> {
  const file = path.join(dir, ACTIVE_LOG_FILE);
  const data = Buffer.from(lines.map(formatLogLine).join(''), 'utf8');
  const existed = current.logIno !== undefined;
  const handle = await open(file, existed ? 'r+' : 'a', PRIVATE_FILE_MODE);
  try {
    const { size } = await handle.stat();
    const offset = existed ? current.logOffset : size;
    if (size > offset) await handle.truncate(offset);
    await handle.write(data, 0, data.length, offset);
    await handle.sync();
    return offset + data.length;
  } finally {
    await handle.close();
    // A new log's directory entry made durable too (as writeFileAtomic does for its rename).
    if (!existed) await syncDir(dir);
  }
}

async function syncDir(dir: string): Promise<void> {
  const handle = await open(dir, 'r').catch(() => undefined);
  await handle?.sync().catch(() => undefined);
  await handle?.close().catch(() => undefined);
}

/** Deletes directories of tools that active.json no longer lists and the database no longer stores. */
async function removeDeletedTools(store: ToolStore, dir: string, index: ActiveIndex): Promise<void> {
  for (const name of await listToolDirectories(dir)) {
    if (index.tools[name]) continue;
    const versions = await store.listVersions(name);
    if (versions.length === 0) await removeToolDirectory(dir, name);
  }
}

function sameTools(a: ReadonlyMap<string, ActiveEntry>, b: Record<string, ActiveEntry>): boolean {
  if (a.size !== Object.keys(b).length) return false;
  return [...a].every(([n, e]) => b[n] !== undefined && b[n].version === e.version && b[n].contentHash === e.contentHash);
}
