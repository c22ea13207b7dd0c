import { readlinkSync } from 'node:fs';
import { liveProcess } from './live-process';

let tag: string | undefined;

/**
 * A name for this process that a later one can judge: `<pid namespace>-<pid>-<start time>`. What a Forge process
 * leaves where others look (sandbox run directories, run cgroups, the lock on agent-tools/active.json) carries it, so
 * that what a killed worker left is recognised as such at once. The PID namespace is in it because the place may be
 * shared with processes whose pids mean something else (/dev/shm, a directory two containers mount): only what was made
 * in this namespace is judged, and only by a pid whose start time also matches.
 */
export function ownerTag(): string {
  // Without /proc (macOS) there is no start time, and a name without one is never judged an orphan.
  tag ??= `${pidNamespace()}-${process.pid}-${liveProcess(process.pid)?.startTime ?? 'unknown'}`;
  return tag;
}

/**
 * Whether a name made with {@link ownerTag} right after `prefix` belongs to a process that is gone: made in this PID
 * namespace, by a pid that no longer runs with that start time. Names of other namespaces or shapes are never orphans.
 */
export function isOrphaned(name: string, prefix: string): boolean {
  const m = new RegExp(`^${prefix}(\\d+)-(\\d+)-(\\d+)-`).exec(name);
  return m !== null && m[1] === pidNamespace() && liveProcess(Number(m[2]))?.startTime !== m[3];
}

function pidNamespace(): string {
  try {
    return /\[(\d+)\]/.exec(readlinkSync('/proc/self/ns/pid'))?.[1] ?? '0';
  } catch {
    return '0';
  }
}
