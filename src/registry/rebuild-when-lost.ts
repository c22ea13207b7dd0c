import { stat } from 'node:fs/promises';
import path from 'node:path';
import { ACTIVE_INDEX_FILE } from './tool-files';

/** How often the agent-tools directory is looked at by default: one stat a second. */
const DEFAULT_INTERVAL_MS = 1_000;

export interface RebuildWhenLostOptions<T> {
  /** How often to look (default 1 s): the bound on how long registries go without their tools. */
  intervalMs?: number;
  /** Called with what `rebuild` returned, after each rebuild. */
  onRebuilt?: (result: T) => void;
  /** Called when a rebuild failed; the next look tries again. */
  onError?: (err: Error) => void;
}

/**
 * Keeps a worker's agent-tools/ from staying lost: every `intervalMs` it checks that active.json is there and, when
 * it is not (the directory or the file was deleted), calls `rebuild` (the worker's materialisation from the
 * database), which writes every active version's files and then active.json. Without it a deleted directory stayed
 * empty until the next tool change, and every registry reading it meanwhile had no tools. Every materialisation
 * leaves active.json behind, so its absence always means a loss. Returns `stop`, which waits for a rebuild under way.
 */
export function rebuildWhenLost<T>(dir: string, rebuild: () => Promise<T>, options: RebuildWhenLostOptions<T> = {}): { stop(): Promise<void> } {
  const indexFile = path.join(dir, ACTIVE_INDEX_FILE);
  let stopped = false;
  let running: Promise<void> | undefined;
  const look = async () => {
    const present = await stat(indexFile).then(
      () => true,
      () => false,
    );
    if (present || stopped) return;
    try {
      const result = await rebuild();
      options.onRebuilt?.(result);
    } catch (err) {
      options.onError?.(err as Error);
    }
  };
  const timer = setInterval(() => {
    running ??= look().finally(() => (running = undefined));
  }, options.intervalMs ?? DEFAULT_INTERVAL_MS);
  timer.unref();
  return {
    async stop() {
      stopped = true;
      clearInterval(timer);
      await running;
    },
  };
}
