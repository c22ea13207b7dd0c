import { watch, type FSWatcher } from 'node:fs';
import { mkdir, stat } from 'node:fs/promises';
import path from 'node:path';
import { ToolFileFormatError } from './errors';
import { memo, type LoadedTool, type Snapshot, type ToolSource } from './source';
import { ACTIVE_INDEX_FILE, readActiveIndex, readCompiledJs, readManifest } from './tool-files';

/** Generation of a registry that found no active.json yet: below every generation a worker writes. */
const NO_INDEX = -1;

/**
 * Loads from the agent-tools directory: active.json for the pointers, each version's manifest for its descriptor, and
 * the compiled module on first call. Needs no database, which is the point for agent processes.
 */
export function directorySource(dir: string, pollIntervalMs: number): ToolSource {
  const indexFile = path.join(dir, ACTIVE_INDEX_FILE);
  return {
    label: dir,

    async load(previous) {
      const index = await readActiveIndex(dir);
      const generation = index?.generation ?? NO_INDEX;
      if (previous && previous.generation === generation) return 'unchanged';
      const tools = new Map<string, LoadedTool>();
      for (const [name, entry] of Object.entries(index?.tools ?? {})) {
        const old = previous?.tools.get(name);
        if (old && old.descriptor.version === entry.version && old.descriptor.contentHash === entry.contentHash) {
          tools.set(name, old);
          continue;
        }
        const manifest = await readManifest(dir, name, entry.version);
        // The worker writes files before pointers, so this is a directory tampered with or copied half-way: fail the
        // reload (the old tools stay) rather than drop the tool or load something else.
        if (!manifest) throw new ToolFileFormatError(indexFile, `${name} v${entry.version} is active but its manifest is missing`);
        if (manifest.contentHash !== entry.contentHash) {
          throw new ToolFileFormatError(indexFile, `${name} v${entry.version}: active.json and the manifest disagree on the content hash`);
        }
        tools.set(name, {
          descriptor: {
            name,
            version: entry.version,
            contentHash: entry.contentHash,
            description: manifest.description,
            ...(manifest.inputJsonSchema !== undefined ? { inputJsonSchema: manifest.inputJsonSchema } : {}),
          },
          compiledJs: memo(() => readCompiledJs(dir, name, entry.version)),
        });
      }
      return { generation, tools } satisfies Snapshot;
    },

    async watch(changed) {
      // fs.watch needs the directory; an agent started before the first deployment creates it (empty, harmless).
      await mkdir(dir, { recursive: true });
      let watcher: FSWatcher | undefined;
      try {
        // active.json is replaced by rename, which shows as an event on the directory (a watch on the file itself
        // would follow the old inode).
        watcher = watch(dir, { persistent: false }, (_event, filename) => {
          if (filename === null || filename === ACTIVE_INDEX_FILE) changed();
        });
        watcher.on('error', () => {
          watcher?.close();
          watcher = undefined;
        });
      } catch {
        watcher = undefined; // no inotify (or out of watches): the poll below still sees every change
      }
      // fs.watch is not reliable everywhere (network file systems, containers' bind mounts, exhausted inotify
      // watches), so a cheap stat poll backs it up: a rename changes the inode, a rewrite the mtime or size.
      const fingerprint = () =>
        stat(indexFile).then(
          (s) => `${s.ino}:${s.mtimeMs}:${s.size}`,
          () => 'absent',
        );
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
