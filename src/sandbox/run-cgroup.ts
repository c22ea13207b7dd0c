import { randomBytes } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { isOrphaned, ownerTag } from './run-dirs';

/**
 * One run's memory cgroup: every process of the run together stays under one limit.
 *
 * RLIMIT_AS bounds each process's address space, but a tool can start many processes (up to maxProcesses), each with
 * its own, and fill its tmpfs directory besides; a memory cgroup charges all of that (anonymous memory and the
 * tmpfs pages they write) to the run. Used where Forge can make one: as root, inside its own memory cgroup (cgroup
 * v1's memory hierarchy, or v2 where its cgroup may have children with the memory controller). Elsewhere runs keep
 * the per-process bounds only, and {@link runCgroupSupport} says why.
 */
export interface RunCgroup {
  /** The directory; the launcher moves itself in (`echo 0 > cgroup.procs`) before it starts the tool. */
  path: string;
  limitBytes: number;
  /** How many times the kernel killed a process of the run for passing the limit. */
  oomKills(): number;
  /** The pids of the processes in it now. */
  pids(): number[];
  /** The most memory ever charged to it (anonymous, page cache, tmpfs), where the kernel keeps that figure. */
  peakBytes(): number | undefined;
  /** User CPU time of all its processes, past and present (cgroup v2 only: v1 keeps it in another hierarchy). */
  cpuUserMicros(): number | undefined;
  /** Removes the cgroup once its processes are gone (retries briefly while the kernel reaps them). */
  remove(): Promise<void>;
}

type Base = { dir: string; version: 1 | 2 };
let probed: { base?: Base; reason?: string } | undefined;

/**
 * Whether runs get a memory cgroup here, and if not, why (for the worker's start-up log). `enabled: false` is the
 * operator turning them off; otherwise the host is probed, once per process.
 */
export function runCgroupSupport(enabled = true): { base?: Base; reason?: string } {
  if (!enabled) return { reason: 'turned off by configuration' };
  probed ??= probe();
  return probed;
}

function probe(): { base?: Base; reason?: string } {
  if (process.getuid?.() !== 0) return { reason: 'Forge does not run as root' };
  let base: Base | undefined;
  try {
    const lines = readFileSync('/proc/self/cgroup', 'utf8').split('\n');
    const v1 = lines.find((l) => /^\d+:([^:]*,)?memory(,[^:]*)?:/.test(l));
    const v2 = lines.find((l) => l.startsWith('0::'));
    if (v1) base = { dir: join('/sys/fs/cgroup/memory', v1.split(':')[2]), version: 1 };
    else if (v2) base = { dir: join('/sys/fs/cgroup', v2.slice(3)), version: 2 };
  } catch (err) {
    return { reason: `cannot read /proc/self/cgroup: ${(err as Error).message}` };
  }
  if (!base) return { reason: 'no memory cgroup hierarchy' };
  const probeDir = join(base.dir, `forge-probe-${process.pid}-${randomBytes(3).toString('hex')}`);
  try {
    mkdirSync(probeDir);
    try {
      writeFileSync(join(probeDir, base.version === 1 ? 'memory.limit_in_bytes' : 'memory.max'), String(64 * 1024 * 1024));
    } finally {
      rmdirSync(probeDir);
    }
    return { base };
  } catch (err) {
    return { reason: `cannot make a memory cgroup under ${base.dir}: ${(err as Error).message}` };
  }
}

/** A fresh memory cgroup limited to `limitBytes`, or undefined where runs cannot have one (or `enabled` is false). */
export function createRunCgroup(limitBytes: number, enabled = true): RunCgroup | undefined {
  const { base } = runCgroupSupport(enabled);
  if (!base) return undefined;
  sweepOrphanedCgroups(base.dir);
  const path = join(base.dir, `forge-run-${ownerTag()}-${randomBytes(6).toString('hex')}`);
  mkdirSync(path);
  try {
    if (base.version === 1) {
      writeFileSync(join(path, 'memory.limit_in_bytes'), String(limitBytes));
      // No swapping past it either, where the kernel accounts swap (memsw may only be set at or above the limit).
      trySet(join(path, 'memory.memsw.limit_in_bytes'), String(limitBytes));
    } else {
      writeFileSync(join(path, 'memory.max'), String(limitBytes));
      trySet(join(path, 'memory.swap.max'), '0');
    }
  } catch (err) {
    rmdirSync(path);
    throw err;
  }
  const events = base.version === 1 ? 'memory.oom_control' : 'memory.events';
  return {
    path,
    limitBytes,
    oomKills: () => {
      try {
        return Number(/^oom_kill (\d+)$/m.exec(readFileSync(join(path, events), 'utf8'))?.[1] ?? 0);
      } catch {
        return 0;
      }
    },
    pids: () => {
      try {
        return readFileSync(join(path, 'cgroup.procs'), 'utf8').split('\n').filter(Boolean).map(Number);
      } catch {
        return [];
      }
    },
    peakBytes: () => readNumber(join(path, base.version === 1 ? 'memory.max_usage_in_bytes' : 'memory.peak')),
    cpuUserMicros: () => (base.version === 2 ? readNumber(join(path, 'cpu.stat'), /^user_usec (\d+)$/m) : undefined),
    remove: () => removeCgroup(path),
  };
}

let swept = false;
/** Once per process: removes the (empty) cgroups of runs whose worker died without removing them (SIGKILL). */
function sweepOrphanedCgroups(dir: string): void {
  if (swept) return;
  swept = true;
  try {
    for (const entry of readdirSync(dir)) {
      if (!isOrphaned(entry, 'forge-run-')) continue;
      try {
        rmdirSync(join(dir, entry));
      } catch {
        // Still has processes (being reaped): the next process's sweep takes it.
      }
    }
  } catch {
    // Nothing readable to sweep.
  }
}

/** A number the kernel keeps in `file` (the whole file, or `pattern`'s first group), or undefined. */
function readNumber(file: string, pattern?: RegExp): number | undefined {
  try {
    const text = readFileSync(file, 'utf8');
    const value = Number(pattern ? pattern.exec(text)?.[1] : text.trim());
    return Number.isFinite(value) ? value : undefined;
  } catch {
    return undefined;
  }
}

function trySet(file: string, value: string): void {
  try {
    writeFileSync(file, value);
  } catch {
    // Not accounted here (no swap accounting): nothing to bound.
  }
}

async function removeCgroup(path: string): Promise<void> {
  for (let attempt = 0; ; attempt++) {
    try {
      rmdirSync(path);
      return;
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'ENOENT') return;
      if (code !== 'EBUSY' || attempt >= 50) {
        process.stderr.write(`forge sandbox: could not remove the run's cgroup ${path}: ${(err as Error).message}\n`);
        return;
      }
      await new Promise((r) => setTimeout(r, 10)); // its last processes are still being reaped
    }
  }
}
