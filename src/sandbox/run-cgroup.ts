import { randomBytes } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { isOrphaned, ownerTag } from '../process/owner-tag';

/**
 * One run's memory cgroup: every process of the run together stays under one limit.
 *
 * RLIMIT_AS bounds each process's address space, but a tool can start many processes (up to maxProcesses), each with
 * its own, and fill its tmpfs directory besides; a memory cgroup charges all of that (anonymous memory and the
 * tmpfs pages they write) to the run. Used where Forge can make one: as root, inside its own memory cgroup (cgroup
 * v1's memory hierarchy, or v2 where its cgroup may have children with the memory controller). Elsewhere runs keep
 * the per-process bounds only, and {@link runCgroupSupport} says why.
 *
 * The processes live one level below the limit, in a child cgroup `tree` that sets none of its own (where the kernel
 * charges a child's memory to its parent: cgroup v2, and v1 with use_hierarchy). The kernel enforces the limit on the
 * whole tree all the same, but Node (libuv) reads only its own cgroup's limit, so a `node` in the tree sizes its V8
 * heap as it would outside, as the user running the command by hand sees it. Seeing 1 GiB, V8 would cap its heap at
 * ~0.5 GiB and shrink its young generation: tsc then scavenged more often and ran 100–140 ms slower (BENCHMARKS.md,
 * 2026-11-26), and a program needing more heap than half its plan's `memoryMb` died of V8's heap limit instead of
 * using what the plan grants. Beyond the limit the kernel kills, and the run is `oom` naming the limit.
 */
export interface RunCgroup {
  /** The directory the launcher moves itself into (`echo 0 > cgroup.procs`) before it starts the tool. */
  path: string;
  /** The directory whose limit bounds the run: `path`'s parent, or `path` itself where the kernel has no hierarchy. */
  limitPath: string;
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

/** `nested`: a child cgroup's memory counts against its parent's limit here (always in v2; v1 with use_hierarchy). */
type Base = { dir: string; version: 1 | 2; nested: boolean };
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
    if (v1) base = { dir: join('/sys/fs/cgroup/memory', v1.split(':')[2]), version: 1, nested: false };
    else if (v2) base = { dir: join('/sys/fs/cgroup', v2.slice(3)), version: 2, nested: true };
  } catch (err) {
    return { reason: `cannot read /proc/self/cgroup: ${(err as Error).message}` };
  }
  if (!base) return { reason: 'no memory cgroup hierarchy' };
  const probeDir = join(base.dir, `forge-probe-${process.pid}-${randomBytes(3).toString('hex')}`);
  try {
    mkdirSync(probeDir);
    try {
      writeFileSync(join(probeDir, base.version === 1 ? 'memory.limit_in_bytes' : 'memory.max'), String(64 * 1024 * 1024));
      // A new v1 cgroup inherits use_hierarchy from its parent; without it a child would escape the run's limit.
      if (base.version === 1) base.nested = readFileSync(join(probeDir, 'memory.use_hierarchy'), 'utf8').trim() === '1';
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
  const limitPath = join(base.dir, `forge-run-${ownerTag()}-${randomBytes(6).toString('hex')}`);
  const path = base.nested ? join(limitPath, TREE) : limitPath;
  mkdirSync(limitPath);
  try {
    if (base.version === 1) {
      writeFileSync(join(limitPath, 'memory.limit_in_bytes'), String(limitBytes));
      // No swapping past it either, where the kernel accounts swap (memsw may only be set at or above the limit).
      trySet(join(limitPath, 'memory.memsw.limit_in_bytes'), String(limitBytes));
    } else {
      writeFileSync(join(limitPath, 'memory.max'), String(limitBytes));
      trySet(join(limitPath, 'memory.swap.max'), '0');
    }
    if (path !== limitPath) mkdirSync(path);
  } catch (err) {
    rmdirSync(limitPath);
    throw err;
  }
  const events = base.version === 1 ? 'memory.oom_control' : 'memory.events';
  return {
    path,
    limitPath,
    limitBytes,
    // A kill is counted where the victim was charged: in v1 the child (its own memory cgroup), in v2 the run's cgroup
    // (the child has no memory controller, and memory.events counts the subtree). Both are read.
    oomKills: () => [...new Set([path, limitPath])].reduce((sum, dir) => sum + oomKillsIn(join(dir, events)), 0),
    pids: () => {
      try {
        return readFileSync(join(path, 'cgroup.procs'), 'utf8').split('\n').filter(Boolean).map(Number);
      } catch {
        return [];
      }
    },
    // Both count the subtree: v1's usage with use_hierarchy, v2's always.
    peakBytes: () => readNumber(join(limitPath, base.version === 1 ? 'memory.max_usage_in_bytes' : 'memory.peak')),
    cpuUserMicros: () => (base.version === 2 ? readNumber(join(limitPath, 'cpu.stat'), /^user_usec (\d+)$/m) : undefined),
    remove: async () => {
      if (path !== limitPath) await removeCgroup(path);
      await removeCgroup(limitPath);
    },
  };
}

/** The child cgroup of a run's cgroup that its processes live in. */
const TREE = 'tree';

function oomKillsIn(file: string): number {
  try {
    return Number(/^oom_kill (\d+)$/m.exec(readFileSync(file, 'utf8'))?.[1] ?? 0);
  } catch {
    return 0; // v2's child has no memory files
  }
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
        rmdirSync(join(dir, entry, TREE));
      } catch {
        // None (a cgroup without a child), or still has processes: then the next rmdir fails too.
      }
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
