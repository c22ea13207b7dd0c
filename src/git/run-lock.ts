/**
 * Makes calls that share a key (one run's worktree, one live checkout) take turns within this process, so two
 * concurrent calls for the same run behave like two calls in a row, which the idempotent operations turn into one
 * effect. This is not how promotions are serialised (the workflow does that); it only keeps git's own locks
 * (index.lock, HEAD.lock, a worktree being added) from making the second of two racing calls fail.
 */
const tails = new Map<string, Promise<unknown>>();

export async function withKeyLock<T>(key: string, fn: () => Promise<T>): Promise<T> {
  const previous = tails.get(key) ?? Promise.resolve();
  const result = previous.then(fn, fn);
  const tail = result.catch(() => undefined);
  tails.set(key, tail);
  try {
    return await result;
  } finally {
    // The last caller of a key removes it, so the map does not grow with every run ever seen.
    if (tails.get(key) === tail) tails.delete(key);
  }
}
