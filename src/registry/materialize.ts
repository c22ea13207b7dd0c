import { access, mkdir } from 'node:fs/promises';
import path from 'node:path';
import type { ToolStore, ToolVersion } from '../db';
import { Mutex } from './mutex';
import {
  ACTIVE_INDEX_LOCK_FILE,
  filesFromRow,
  listToolDirectories,
  readActiveIndex,
  readManifest,
  removeToolDirectory,
  writeActiveIndex,
  writeToolVersionFiles,
  versionPaths,
  type WriteVersionResult,
} from './tool-files';
import { ToolFileConflictError } from './errors';
import { withFileLock } from './file-lock';
import type { ActiveEntry, ActiveIndex } from './types';
import { PRIVATE_DIR_MODE } from '../contract/private-modes';

/**
 * Writes the files of one stored version under `dir` (source, compiled module, manifest last). The deploy activity
 * calls it right after the transaction that stores and activates the version, and before publishing active.json:
 * registries read the active pointers from active.json, so the files exist before any pointer they read names them.
 * Idempotent; throws ToolFileConflictError if different bytes already claim this version.
 */
export function writeToolVersion(
  dir: string,
  row: ToolVersion,
  options: { inputJsonSchema?: unknown } = {},
): Promise<WriteVersionResult> {
  // Under the directory's lock, so that the cleanup of a deleted tool cannot remove files of a re-created one while
  // they are being written.
  return stateFor(dir).lock.run(() => writeToolVersionFiles(dir, filesFromRow(row, options)));
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
}

const directories = new Map<string, DirectoryState>();
function stateFor(dir: string): DirectoryState {
  const key = path.resolve(dir);
  let state = directories.get(key);
  if (!state) directories.set(key, (state = { lock: new Mutex(), verified: new Map() }));
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
  return state.lock.run(() => materializeLocked(store, dir, state.verified));
}

/**
 * How often one materialisation writes again after finding files it named gone: a deletion (rm -rf of agent-tools/)
 * that raced it. Past that the call fails and its caller's next attempt (the next look of rebuildWhenLost, the next
 * change) tries again.
 */
const MAX_PASSES = 5;

async function materializeLocked(store: ToolStore, dir: string, verified: Map<string, string>): Promise<ActiveIndex> {
  for (let pass = 1; ; pass++) {
    const { index, tools } = await materializePass(store, dir, verified);
    // A look at a file is a moment's truth only: a deletion running beside this call (another process, or one that
    // blocked this process while a read was in flight) can take away a file it saw, or had just written, before
    // active.json names it. So the files are looked at once more after active.json is in place, and whatever is
    // missing is written again, with active.json, until what it names is all there.
    const missing = await missingVersions(dir, tools);
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
async function materializePass(
  store: ToolStore,
  dir: string,
  verified: Map<string, string>,
): Promise<{ index: ActiveIndex; tools: Record<string, ActiveEntry> }> {
  // The event id is read before the pointers, so the pointers are at least as new as the generation they get.
  const [newest] = await store.listEvents({ limit: 1 });
  const eventId = newest?.id ?? 0;
  const pointers = await store.listActive();

  const tools: Record<string, ActiveEntry> = {};
  for (const pointer of pointers) {
    const key = `${pointer.name}@${pointer.version}`;
    const manifest = await readManifest(dir, pointer.name, pointer.version);
    if (manifest && verified.get(key) === manifest.contentHash) {
      tools[pointer.name] = { version: pointer.version, contentHash: manifest.contentHash };
      continue;
    }
    const row = await store.getVersion(pointer.name, pointer.version);
    // Removed since listActive: its removal notified, and the materialisation that follows will drop it.
    if (!row) continue;
    if (manifest && manifest.contentHash !== row.contentHash) {
      throw new ToolFileConflictError(versionPaths(dir, row.name, row.version).manifest, row.name, row.version);
    }
    // Written whether or not the manifest was there: writeToolVersionFiles leaves identical files alone and creates
    // whichever of the three is missing, so a version a deletion took half of is made whole again.
    await writeToolVersionFiles(dir, filesFromRow(row));
    verified.set(key, row.contentHash);
    tools[pointer.name] = { version: row.version, contentHash: row.contentHash };
  }

  return { index: await replaceIndex(dir, eventId, tools), tools };
}

/** `name@version` of every version in `tools` with a file missing on disk now. */
async function missingVersions(dir: string, tools: Record<string, ActiveEntry>): Promise<string[]> {
  const missing: string[] = [];
  for (const [name, entry] of Object.entries(tools)) {
    const paths = versionPaths(dir, name, entry.version);
    const present = await Promise.all([paths.source, paths.compiled, paths.manifest].map((file) => access(file).then(() => true, () => false)));
    if (present.includes(false)) missing.push(`${name}@${entry.version}`);
  }
  return missing;
}

/** Writes active.json unless nothing moved, never with a generation at or below the one on disk. */
async function replaceIndex(dir: string, eventId: number, tools: Record<string, ActiveEntry>): Promise<ActiveIndex> {
  const current = await readActiveIndex(dir);
  if (current && eventId <= current.generation && sameTools(current.tools, tools)) return current;
  const generation = Math.max(eventId, (current?.generation ?? -1) + 1);
  // Another process sharing the directory (a second worker on this host) may write too: the look at what is there
  // and the replacement are one step under a lock file, so active.json never goes back past what it wrote.
  await mkdir(dir, { recursive: true, mode: PRIVATE_DIR_MODE });
  return withFileLock(path.join(dir, ACTIVE_INDEX_LOCK_FILE), async () => {
    const latest = await readActiveIndex(dir);
    if (latest && latest.generation >= generation) return latest;
    const next: ActiveIndex = { generation, updatedAt: new Date().toISOString(), tools };
    await writeActiveIndex(dir, next);
    return next;
  });
}

/** Deletes directories of tools that active.json no longer lists and the database no longer stores. */
async function removeDeletedTools(store: ToolStore, dir: string, index: ActiveIndex): Promise<void> {
  for (const name of await listToolDirectories(dir)) {
    if (index.tools[name]) continue;
    const versions = await store.listVersions(name);
    if (versions.length === 0) await removeToolDirectory(dir, name);
  }
}

function sameTools(a: Record<string, ActiveEntry>, b: Record<string, ActiveEntry>): boolean {
  const names = Object.keys(a);
  if (names.length !== Object.keys(b).length) return false;
  return names.every((n) => b[n] !== undefined && b[n].version === a[n].version && b[n].contentHash === a[n].contentHash);
}
