import { chmod, chown, lstat, readdir, rm } from 'node:fs/promises';
import { spawnThroughHelper } from '../process/spawner';

/**
 * Removes a run's private directory (or anything else a run's user made), whatever the tool left in it. Never
 * throws: what cannot be removed is reported on stderr, and the run's verdict stays what the tool earned (cleanup is
 * the platform's job, not the tool's outcome).
 *
 * Only GNU rm removes a tree that has subdirectories: it walks by directory handle (openat, no symlink followed), so
 * another run's process that swaps a path component for a symlink while root is walking (a tool can leave
 * world-writable directories behind) cannot steer the removal outside the tree; fs.rm walks by path and would follow
 * it. A tree nested deeper than PATH_MAX is no problem for it either, and `--one-file-system` keeps it out of
 * anything mounted inside. A flat directory (the usual run: the module and a node_modules link) is removed by fs.rm,
 * which is faster and safe there: each entry is unlinked, never traversed, and the directory sits in a sticky
 * directory where no other user can replace it.
 */
export async function removeRunDir(dir: string): Promise<void> {
  let flat = false;
  try {
    const st = await lstat(dir);
    if (!st.isDirectory()) {
      await rm(dir, { force: true }); // a file or symlink: unlinked, never followed
      return;
    }
    // Take the directory back first (as root): from now on no other user can add or rename anything in it, so what
    // is flat now stays flat. (It sits in a sticky directory: only its owner or root could replace it.)
    await chown(dir, 0, 0).catch(() => undefined);
    await chmod(dir, 0o700).catch(() => undefined);
    const entries = await readdir(dir, { withFileTypes: true });
    flat = entries.every((e) => !e.isDirectory());
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
    // Unreadable: rm -rf decides.
  }
  if (flat) {
    try {
      await rm(dir, { recursive: true, force: true });
      return;
    } catch {
      // A subdirectory appeared meanwhile, or something else: the careful way.
    }
  }
  const failure = await rmByHandle(dir);
  if (failure !== undefined) process.stderr.write(`forge sandbox: could not remove ${dir}: ${failure}\n`);
}

/** `rm -rf --one-file-system DIR`, started by the spawn helper (cheap from a large worker); undefined on success, else what went wrong. */
export async function rmByHandle(...paths: string[]): Promise<string | undefined> {
  try {
    const { error, stderr } = await spawnThroughHelper({
      file: 'rm',
      args: ['-rf', '--one-file-system', '--', ...paths],
      cwd: '/',
      env: { PATH: '/usr/bin:/bin' },
      maxBuffer: 1024 * 1024,
      timeout: RM_TIMEOUT_MS,
    });
    return error ? stderr.toString('utf8').trim().slice(0, 2000) || error.message : undefined;
  } catch (err) {
    return (err as Error).message;
  }
}

/** A removal that takes longer is stuck (a hung file system): reported, and the directory is left to the next sweep. */
const RM_TIMEOUT_MS = 120_000;
