import { readFileSync } from 'node:fs';

/**
 * Whether `pid` is a live process, and which one. A process that is gone, or a zombie (a SIGKILLed worker its parent
 * has not reaped yet: it exists for kill(0), but its memory and files are released, so it holds nothing), is
 * undefined. A live one comes with its start time (clock ticks since boot, from /proc/PID/stat), which tells it from a
 * later process given the same pid; without /proc (macOS) there is none, and kill(0) decides (EPERM: it exists but
 * belongs to someone else).
 *
 * The one answer for every "did its owner die?" in Forge: the embedded database's lock, a killed writer's temp files
 * in agent-tools/, a dead worker's activity attempts.
 */
export function liveProcess(pid: number): { startTime?: string } | undefined {
  let stat: string | undefined;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, 'latin1');
  } catch {
    // Gone, or no /proc here: kill(0) says.
  }
  if (stat !== undefined) {
    // "pid (comm) S ...": comm may hold spaces and parentheses, so the fields are counted after the last ')'; state is
    // the 3rd field, starttime the 22nd.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return fields[0] === 'Z' || fields[0] === 'X' ? undefined : { startTime: fields[19] };
  }
  try {
    process.kill(pid, 0);
    return {};
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM' ? {} : undefined;
  }
}
