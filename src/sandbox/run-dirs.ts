import { readFileSync, readlinkSync } from 'node:fs';
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { removeRunDir } from './remove-run-dir';

/**
 * Run directories are named after the process that made them: `forge-sbx-<pid namespace>-<pid>-<start time>-XXXXXX`.
 * A worker killed with SIGKILL cannot remove its own (its spares' above all: they wait for runs for as long as the
 * worker lives), so the next Forge process that uses the same root removes those whose maker is gone. The PID
 * namespace is in the name because a root such as /dev/shm may be shared with processes whose pids mean something
 * else: only directories made in this namespace are judged, and only by a pid whose start time also matches.
 */
export function runDirPrefix(): string {
  return `forge-sbx-${ownerTag()}-`;
}

let tag: string | undefined;
/** `<pid namespace>-<pid>-<start time>` of this process: what names its run directories and cgroups. */
export function ownerTag(): string {
  tag ??= `${pidNamespace()}-${process.pid}-${startTime(process.pid)}`;
  return tag;
}

/**
 * Whether a name made with {@link ownerTag} after `prefix` belongs to a process that is gone: made in this PID
 * namespace, by a pid that no longer runs with that start time. Names of other namespaces or shapes are never orphans.
 */
export function isOrphaned(name: string, prefix: string): boolean {
  const m = new RegExp(`^${prefix}(\\d+)-(\\d+)-(\\d+)-`).exec(name);
  return m !== null && m[1] === pidNamespace() && startTime(Number(m[2])) !== m[3];
}

function pidNamespace(): string {
  try {
    return /\[(\d+)\]/.exec(readlinkSync('/proc/self/ns/pid'))?.[1] ?? '0';
  } catch {
    return '0';
  }
}

/** The process's start time in clock ticks since boot (field 22 of /proc/PID/stat), or undefined if it is gone. */
function startTime(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'latin1');
    // The command name (field 2) may hold spaces and parentheses: count fields from the last ')'.
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19];
  } catch {
    return undefined;
  }
}

const swept = new Map<string, Promise<string[]>>();

/**
 * Removes, once per process and root, the run directories in `root` whose maker is gone; resolves with what it removed.
 * Never throws (a root it cannot read has nothing to sweep).
 */
export function sweepOrphanedRunDirs(root: string): Promise<string[]> {
  let sweep = swept.get(root);
  if (!sweep) {
    sweep = sweepNow(root).catch(() => []);
    swept.set(root, sweep);
  }
  return sweep;
}

async function sweepNow(root: string): Promise<string[]> {
  const removed: string[] = [];
  for (const entry of await readdir(root)) {
    if (!isOrphaned(entry, 'forge-sbx-')) continue;
    await removeRunDir(join(root, entry));
    removed.push(entry);
  }
  return removed;
}
