/**
 * Maps with at most `limit` calls pending; results in input order; rejects with the first failure. For work over every
 * tool that is bound by file-system round trips (manifests, hashes of version files): one at a time, 1,000 tools took
 * seconds.
 */
export async function mapLimit<T, R>(items: readonly T[], limit: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const results = new Array<R>(items.length);
  let next = 0;
  const lane = async () => {
    while (next < items.length) {
      const i = next++;
      results[i] = await fn(items[i]);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, lane));
  return results;
}
