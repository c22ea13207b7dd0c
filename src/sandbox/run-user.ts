import { randomInt } from 'node:crypto';
import { lstatSync } from 'node:fs';
import { opendir } from 'node:fs/promises';
import { join } from 'node:path';
import { removeRunDir, rmByHandle } from './remove-run-dir';
import { RUN_UID_RANGE, type SandboxLimits } from './limits';

/** Uids handed to runs of this process that have not ended yet: two runs of one worker never share one. */
const inUse = new Set<number>();

/**
 * A uid of its own for one run's processes, or undefined when runs keep Forge's user: Forge is not root (it could not
 * switch), or `userIdBase` is 0. Picked at random in the range so that workers sharing a host rarely meet (a uid in
 * common would share RLIMIT_NPROC and each other's files, nothing of Forge's). Give it back with {@link releaseRunUser}.
 */
export function takeRunUser(limits: SandboxLimits): number | undefined {
  if (limits.userIdBase === 0 || process.getuid?.() !== 0) return undefined;
  for (let attempt = 0; attempt < 16; attempt++) {
    const uid = limits.userIdBase + randomInt(RUN_UID_RANGE);
    if (!inUse.has(uid)) {
      inUse.add(uid);
      return uid;
    }
  }
  throw new Error('no free sandbox uid after 16 tries');
}

export function releaseRunUser(uid: number | undefined): void {
  if (uid !== undefined) inUse.delete(uid);
}

/** Directories any user may create files in, where a run's user can leave something behind outside its own directory. */
const SHARED_DIRS = ['/tmp', '/var/tmp', '/dev/shm', '/run/lock'];

/**
 * Removes what a run's user left in the shared writable directories (a file in /dev/shm is memory that outlives the
 * run; repeated runs would fill it). Anything that user owns there is the run's: the uid was picked for it. Shared
 * directories one level down (like /tmp/.X11-unix) are looked into too. Never throws.
 */
export async function removeRunUserFiles(uid: number, extraRoot: string): Promise<void> {
  const roots = [...new Set([...SHARED_DIRS, extraRoot])];
  for (const root of roots) await removeOwnedIn(root, uid, 1);
}

async function removeOwnedIn(dir: string, uid: number, depth: number): Promise<void> {
  let handle;
  try {
    handle = await opendir(dir);
  } catch {
    return;
  }
  // Read in batches and hand the event loop back every few hundred entries: a run can leave hundreds of thousands of
  // files here, and the process doing this also supervises other runs, whose results must not wait behind it.
  const owned: string[] = [];
  let seen = 0;
  for await (const entry of handle) {
    const path = join(dir, entry.name);
    try {
      const st = lstatSync(path); // on tmpfs ~µs: far cheaper than a thread-pool round trip each
      if (st.uid === uid) owned.push(path);
      else if (depth > 0 && st.isDirectory() && (st.mode & 0o002) !== 0) await removeOwnedIn(path, uid, depth - 1);
    } catch {
      // Gone meanwhile.
    }
    if (++seen % 256 === 0) await new Promise((resolve) => setImmediate(resolve));
  }
  if (owned.length <= 8) {
    for (const path of owned) await removeRunDir(path);
    return;
  }
  // By handle (`rm -rf`: it follows no symlink), 500 leftovers at a time.
  for (let i = 0; i < owned.length; i += 500) await rmByHandle(...owned.slice(i, i + 500));
}
