import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { isOrphaned, ownerTag } from '../process/owner-tag';
import { removeRunDir } from './remove-run-dir';

/**
 * Run directories are named after the process that made them (ownerTag): `forge-sbx-<pid namespace>-<pid>-<start
 * time>-XXXXXX`. A worker killed with SIGKILL cannot remove its own (its spares' above all: they wait for runs for as
 * long as the worker lives), so the next Forge process that uses the same root removes those whose maker is gone.
 */
export function runDirPrefix(): string {
  return `forge-sbx-${ownerTag()}-`;
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
