import type { ToolDescriptor } from './types';

/** One loaded tool version. Immutable: a reload that changes a tool replaces its entry. */
export interface LoadedTool {
  descriptor: ToolDescriptor;
  /** The compiled ES module, read when first needed and kept (version files never change). */
  compiledJs(): Promise<string>;
}

/** Everything a registry holds at one moment; swapped as a whole on reload. */
export interface Snapshot {
  generation: number;
  tools: ReadonlyMap<string, LoadedTool>;
  /**
   * The names whose entry differs from the snapshot this one was loaded from, when the source knows them (a reload
   * that followed one change), so telling listeners what changed does not walk every tool. Absent: compare all.
   */
  changed?: ReadonlySet<string>;
  /** The source's own bookmark (the directory source's: how far it read active.json and active.log). */
  cursor?: unknown;
}

/** Where a registry loads from: the agent-tools directory or the database. */
export interface ToolSource {
  /** For messages: the directory, or `database (pglite)`. */
  readonly label: string;
  /**
   * Loads the current active versions, reusing entries of `previous` whose version did not change. `unchanged` when
   * nothing moved since `previous`. Throws when the state cannot be read completely (the caller keeps `previous`).
   */
  load(previous: Snapshot | undefined, hint?: ReloadHint): Promise<Snapshot | 'unchanged'>;
  /**
   * Calls `changed` whenever the state may have changed (spurious calls are fine), with the names that changed when
   * the source knows them (a NOTIFY's payload), without when anything may have; resolves to a stop function.
   */
  watch(changed: (names?: readonly string[]) => void): Promise<() => Promise<void>>;
}

/** The names `watch` reported since the last load: only these can have moved (absent: anything may have). */
export interface ReloadHint {
  names: ReadonlySet<string>;
}

/** Caches the first successful read; a failed read is retried by the next caller. */
export function memo(read: () => Promise<string>): () => Promise<string> {
  let pending: Promise<string> | undefined;
  return () => {
    pending ??= read().catch((err: unknown) => {
      pending = undefined;
      throw err;
    });
    return pending;
  };
}
