import { readdirSync, readFileSync } from 'node:fs';
import { liveProcess } from '../../src/process/live-process';

/** Live processes (zombies excluded) whose command line or environment contains `marker`. */
export function processesMarkedWith(marker: string): { pid: number; cmdline: string }[] {
  const found: { pid: number; cmdline: string }[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      if (/\) [ZX] /.test(stat)) continue;
      const cmdline = readFileSync(`/proc/${entry}/cmdline`, 'latin1').replace(/\0/g, ' ');
      const environ = readFileSync(`/proc/${entry}/environ`, 'latin1');
      if (cmdline.includes(marker) || environ.includes(marker)) found.push({ pid: Number(entry), cmdline });
    } catch {
      // exited while we looked
    }
  }
  return found;
}

/** Whether `pid` is a live process (not gone, not a zombie): Forge's own answer (src/process/live-process.ts). */
export const alive = (pid: number): boolean => liveProcess(pid) !== undefined;

/** Polls `check` every 20 ms for up to `ms`; resolves with its last answer. */
export async function until(check: () => boolean, ms = 5_000): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (!check() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
  return check();
}
