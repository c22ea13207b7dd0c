import { watch, type FSWatcher } from 'node:fs';
import { mkdir, stat } from 'node:fs/promises';
import path from 'node:path';
import { ToolFileFormatError } from './errors';
import { memo, type LoadedTool, type Snapshot, type ToolSource } from './source';
import { ACTIVE_INDEX_FILE, readCompiledJs, readManifest } from './tool-files';
import { ACTIVE_LOG_FILE, readActiveIndexState, type ActiveIndexState } from './active-log';
import type { ActiveEntry } from './types';
import { PRIVATE_DIR_MODE } from '../contract/private-modes';
import { mapLimit } from './map-limit';

const MANIFEST_READS_AT_ONCE = 64;

/** Calls `changed` on every event about active.json or active.log in `dir`; undefined where fs.watch cannot be had. */
function watchIndex(dir: string, changed: () => void): FSWatcher | undefined {
  try {
    // active.json is replaced by rename, which shows as an event on the directory (a watch on the file itself would
    // follow the old inode).
    const watcher = watch(dir, { persistent: false }, (_event, filename) => {
      if (filename === null || filename === ACTIVE_INDEX_FILE || filename === ACTIVE_LOG_FILE) changed();
    });
    watcher.on('error', () => watcher.close()); // the poll carries on alone
    return watcher;
  } catch {
    return undefined; // no inotify (or out of watches): the poll still sees every change
  }
}

/** Generation of a registry that found no active.json yet: below every generation a worker writes. */
const NO_INDEX = -1;

/**
 * Loads from the agent-tools directory: active.json for the pointers, each version's manifest for its descriptor, and
 * the compiled module on first call. Needs no database, which is the point for agent processes.
 */
export function directorySource(dir: string, options: { pollIntervalMs: number; fsWatch: boolean }): ToolSource {
  const { pollIntervalMs } = options;
  const indexFile = path.join(dir, ACTIVE_INDEX_FILE);
  const logFile = path.join(dir, ACTIVE_LOG_FILE);
  return {
    label: dir,

    async load(previous) {
      // Follows active.json and active.log from where the previous snapshot stopped: after one deployment that is one
      // line of the log and one manifest, whatever the number of tools. Only a new active.json (a fold, a rebuild) is
      // read whole, and even then unchanged entries are reused without reading their manifests.
      const cursor = previous?.cursor as ActiveIndexState | undefined;
      const read = await readActiveIndexState(dir, cursor);
      const generation = read.state?.generation ?? NO_INDEX;
      if (previous && previous.generation === generation && read.changed !== 'all') return 'unchanged';
      const pointers = read.state?.tools ?? new Map<string, ActiveEntry>();
      const names = read.changed === 'all' || !previous ? [...pointers.keys()] : [...read.changed];
      const loadOne = async (name: string): Promise<LoadedTool | undefined> => {
        const entry = pointers.get(name);
        if (!entry) return undefined;
        const old = previous?.tools.get(name);
        if (old && old.descriptor.version === entry.version && old.descriptor.contentHash === entry.contentHash) return old;
        const manifest = await readManifest(dir, name, entry.version);
        // The worker writes files before pointers, so this is a directory tampered with or copied half-way: fail the
        // reload (the old tools stay) rather than drop the tool or load something else.
        const which = `${name} v${entry.version}`;
        if (!manifest) throw new ToolFileFormatError(indexFile, `${which} is active but its manifest is missing`);
        if (manifest.contentHash !== entry.contentHash) {
          throw new ToolFileFormatError(indexFile, `${which}: active.json and the manifest disagree on the content hash`);
        }
        return {
          descriptor: {
            name,
            version: entry.version,
            contentHash: entry.contentHash,
            description: manifest.description,
            ...(manifest.inputJsonSchema !== undefined ? { inputJsonSchema: manifest.inputJsonSchema } : {}),
          },
          compiledJs: memo(() => readCompiledJs(dir, name, entry.version)),
        };
      };
      // Manifests are read a batch at a time rather than one after the other: with 1,000 tools the load is bound by
      // file-system round trips (bench/registry-load.ts).
      const loaded = await mapLimit(names, MANIFEST_READS_AT_ONCE, loadOne);
      if (read.changed === 'all' || !previous) {
        const tools = new Map<string, LoadedTool>();
        names.forEach((name, i) => tools.set(name, loaded[i] as LoadedTool));
        return { generation, tools, cursor: read.state } satisfies Snapshot;
      }
      // A copy of the map of references (the snapshot is swapped whole, so a caller never sees half a change).
      const tools = new Map(previous.tools);
      names.forEach((name, i) => {
        const tool = loaded[i];
        if (tool) tools.set(name, tool);
        else tools.delete(name);
      });
      return { generation, tools, changed: read.changed, cursor: read.state } satisfies Snapshot;
    },

    async watch(changed) {
      // fs.watch needs the directory; an agent started before the first deployment creates it (empty, harmless).
      await mkdir(dir, { recursive: true, mode: PRIVATE_DIR_MODE });
      const watcher = options.fsWatch ? watchIndex(dir, changed) : undefined;
      // fs.watch is not reliable everywhere (network file systems, containers' bind mounts, exhausted inotify
      // watches), so a cheap stat poll backs it up: a rename changes the inode, a rewrite the mtime or size.
      const fingerprintOf = (file: string) =>
        stat(file).then(
          (s) => `${s.ino}:${s.mtimeMs}:${s.size}`,
          () => 'absent',
        );
      // active.log grows by a line per change; active.json is replaced when the log is folded into it.
      const fingerprint = async () => `${await fingerprintOf(indexFile)}|${await fingerprintOf(logFile)}`;
      // Taken before the caller's first load, so a change that lands in between is seen by the first poll.
      let last = await fingerprint();
      const poll = setInterval(() => {
        void fingerprint().then((now) => {
          if (now !== last) changed();
          last = now;
        });
      }, pollIntervalMs);
      poll.unref();
      return async () => {
        clearInterval(poll);
        watcher?.close();
      };
    },
  };
}
