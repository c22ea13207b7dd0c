import { readdirSync, readFileSync } from 'node:fs';

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
