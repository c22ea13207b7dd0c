/** Percentile of already-collected samples (nearest-rank), in the samples' unit. */
export function percentile(samples: number[], p: number): number {
  if (samples.length === 0) return NaN;
  const sorted = [...samples].sort((a, b) => a - b);
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[rank];
}

export function round(n: number, digits = 2): number {
  const f = 10 ** digits;
  return Math.round(n * f) / f;
}

/** Wall time of one async call in milliseconds (high resolution). */
export async function timeMs(fn: () => Promise<unknown>): Promise<number> {
  const start = process.hrtime.bigint();
  await fn();
  return Number(process.hrtime.bigint() - start) / 1e6;
}

/** `{<prefix>_p50_ms, <prefix>_p95_ms}` of the samples, rounded to 0.1 ms: the figures every benchmark reports. */
export function p50p95(prefix: string, samples: number[]): Record<string, number> {
  return { [`${prefix}_p50_ms`]: round(percentile(samples, 50), 1), [`${prefix}_p95_ms`]: round(percentile(samples, 95), 1) };
}

/** One aligned line of a benchmark's table: label, p50 and p95 in milliseconds. */
export function statsRow(label: string, samples: number[], width = 28): string {
  const fmt = (p: number) => round(percentile(samples, p), 1).toString().padStart(7);
  return `${label.padEnd(width)} p50 ${fmt(50)} ms   p95 ${fmt(95)} ms`;
}
