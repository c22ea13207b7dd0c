// Not '../db': its index pulls in the embedded database's driver, which an agent process in directory mode never needs.
import { TOOLS_CHANNEL } from '../db/channels';
import { createToolStore } from '../db/tool-store';
import type { ForgeDatabase } from '../db/types';
import { inputJsonSchemaOf } from './input-json-schema';
import { memo, type LoadedTool, type Snapshot, type ToolSource } from './source';

/**
 * Loads from the database: the active pointers and each active version's row (compiled module included). Reloads on
 * every notification on TOOLS_CHANNEL, and re-reads after the listener reconnected, since notifications sent while it
 * was down are lost.
 */
export function databaseSource(database: ForgeDatabase): ToolSource {
  const store = createToolStore(database);
  const entryOf = async (name: string, version: number): Promise<LoadedTool | undefined> => {
    const row = await store.getVersion(name, version);
    if (!row) return undefined; // removed since the pointer was read; its removal notified, so another reload follows
    const compiledJs = row.compiledJs;
    return {
      descriptor: { name: row.name, version: row.version, contentHash: row.contentHash, description: row.description, ...inputJsonSchemaOf(row.verdict) },
      compiledJs: memo(() => Promise.resolve(compiledJs)),
    };
  };
  const loadNamed = async (previous: Snapshot, names: ReadonlySet<string>): Promise<Snapshot | 'unchanged'> => {
    const changed = new Set<string>();
    const tools = new Map(previous.tools);
    for (const name of names) {
      const pointer = await store.getActive(name);
      const old = previous.tools.get(name);
      if (pointer && old?.descriptor.version === pointer.version) continue;
      const entry = pointer ? await entryOf(name, pointer.version) : undefined;
      if (!entry && !old) continue;
      if (entry) tools.set(name, entry);
      else tools.delete(name);
      changed.add(name);
    }
    if (changed.size === 0) return 'unchanged';
    return { generation: previous.generation + 1, tools, changed } satisfies Snapshot;
  };
  return {
    label: `database (${database.kind})`,

    async load(previous, hint) {
      // A NOTIFY names its tool: only those pointers are read, whatever the number of tools.
      if (previous && hint) return loadNamed(previous, hint.names);
      const pointers = await store.listActive();
      const tools = new Map<string, LoadedTool>();
      let changed = !previous || previous.tools.size !== pointers.length;
      for (const pointer of pointers) {
        const old = previous?.tools.get(pointer.name);
        // A stored version never changes, so (name, version) identifies the entry.
        if (old && old.descriptor.version === pointer.version) {
          tools.set(pointer.name, old);
          continue;
        }
        changed = true;
        const row = await store.getVersion(pointer.name, pointer.version);
        if (!row) continue; // removed since listActive; its removal notified, so another reload follows
        const compiledJs = row.compiledJs;
        tools.set(pointer.name, {
          descriptor: {
            name: row.name,
            version: row.version,
            contentHash: row.contentHash,
            description: row.description,
            ...inputJsonSchemaOf(row.verdict),
          },
          compiledJs: memo(() => Promise.resolve(compiledJs)),
        });
      }
      if (!changed) return 'unchanged';
      // The database has no generation of its own to offer here; a local counter is enough to order this
      // registry's own snapshots.
      return { generation: (previous?.generation ?? 0) + 1, tools } satisfies Snapshot;
    },

    async watch(changed) {
      const unlisten = await database.listen(TOOLS_CHANNEL, (name) => changed([name]));
      // Notifications sent while the listener was down are lost: anything may have changed.
      const stopReconnect = database.onListenerReconnect(() => changed());
      return async () => {
        stopReconnect();
        await unlisten();
      };
    },
  };
}
