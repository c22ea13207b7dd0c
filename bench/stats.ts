import { readdirSync, readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';

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

/** CPU time (user + system, ms) the whole machine has spent so far, from /proc/stat: every process, every core. */
export function machineCpuMs(): number {
  // cpu  user nice system idle iowait irq softirq steal ...: all but idle and iowait are work (in USER_HZ = 100/s).
  const f = readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).slice(1).map(Number);
  return (f[0] + f[1] + f[2] + f[5] + f[6] + f[7]) * 10;
}

/**
 * Resolves once the machine has been nearly idle (under `share` of its cores) for one `windowMs`, or after `maxMs`:
 * what a measurement of CPU waits for after a platform starts (its type checker warms up a few seconds later).
 */
export async function machineQuiet(options: { windowMs?: number; share?: number; maxMs?: number } = {}): Promise<void> {
  const { windowMs = 1000, share = 0.1, maxMs = 30_000 } = options;
  const cores = availableParallelism();
  const until = performance.now() + maxMs;
  while (performance.now() < until) {
    const before = machineCpuMs();
    await sleep(windowMs);
    if (machineCpuMs() - before <= windowMs * cores * share) return;
  }
}

/** CPU time (user + system, ms) of this process's children that it has reaped (cutime + cstime). */
export function reapedChildrenCpuMs(): number {
  const stat = readFileSync('/proc/self/stat', 'utf8');
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(f[13]) + Number(f[14])) * 10;
}

/**
 * CPU time (user + system, ms) of `pid` itself and of each of its direct children by command name, each child with
 * the descendants it has reaped (so a helper's short-lived processes count as the helper's).
 */
export function processTreeCpuMs(pid: number): Record<string, number> {
  const read = (p: number | string): { comm: string; ppid: number; own: number; reaped: number } | undefined => {
    try {
      const stat = readFileSync(`/proc/${p}/stat`, 'utf8');
      const comm = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
      const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      return { comm, ppid: Number(f[1]), own: (Number(f[11]) + Number(f[12])) * 10, reaped: (Number(f[13]) + Number(f[14])) * 10 };
    } catch {
      return undefined;
    }
  };
  const split: Record<string, number> = { self: read(pid)?.own ?? 0 };
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const p = read(entry);
    if (p?.ppid === pid) split[p.comm] = (split[p.comm] ?? 0) + p.own + p.reaped;
  }
  return split;
}

/** What each process of a {@link processTreeCpuMs} split spent between two readings, ÷ `per` (ms per unit of work). */
export function cpuSplitSince(before: Record<string, number>, after: Record<string, number>, per: number): [string, number][] {
  return Object.entries(after)
    .map(([name, ms]): [string, number] => [name, round((ms - (before[name] ?? 0)) / per, 1)])
    .filter(([, ms]) => ms > 0);
}

/** Resident memory of a process, MiB (0 when it is gone). */
export function rssMib(pid: number): number {
  try {
    const kb = /VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return kb ? Math.round(Number(kb[1]) / 1024) : 0;
  } catch {
    return 0;
  }
}
