import { randomBytes } from 'node:crypto';
import { open, readFile, stat, unlink } from 'node:fs/promises';
import { PRIVATE_FILE_MODE } from '../contract/private-modes';
import { isOrphaned, ownerTag } from '../process/owner-tag';

/** A lock older than this is taken over: its holder died (sections under it last milliseconds). */
const STALE_MS = 5_000;

/**
 * Runs `fn` while holding a lock shared by every process of the host on `lockFile` (created with O_EXCL, removed on
 * release). For short read-compare-replace sections, such as never letting active.json go back a generation when two
 * workers share agent-tools/. The lock file names its holder (ownerTag): a lock whose holder is a process of this PID
 * namespace that is gone is taken over at once, so a worker restarted after a kill does not wait for it; any other
 * lock only once older than {@link STALE_MS}, because processes sharing the directory may live in other PID namespaces
 * (containers), where a pid means another process.
 * @throws Error when the lock cannot be had within `timeoutMs` (the caller's retry path applies).
 */
export async function withFileLock<T>(lockFile: string, fn: () => Promise<T>, timeoutMs = 10_000): Promise<T> {
  const token = `${ownerTag()}-${randomBytes(6).toString('hex')}`;
  const deadline = Date.now() + timeoutMs;
  for (let wait = 1; ; wait = Math.min(wait * 2, 25)) {
    if (await tryCreate(lockFile, token)) break;
    if (await removeOrphanedLock(lockFile)) continue;
    if (await isStale(lockFile)) {
      await unlink(lockFile).catch(() => undefined);
      continue;
    }
    if (Date.now() > deadline) throw new Error(`could not take the lock ${lockFile} within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, wait));
  }
  try {
    return await fn();
  } finally {
    // Only our own: a holder that was taken over as stale must not remove its successor's lock.
    if ((await readFile(lockFile, 'utf8').catch(() => '')) === token) await unlink(lockFile).catch(() => undefined);
  }
}

/**
 * Removes `lockFile` if its holder is a process of this PID namespace that is gone (a worker killed while it held the
 * lock); resolves with whether it did. A worker's start calls it, so that what a killed one left does not outlive it
 * when nothing needs the lock again. Never throws.
 */
export async function removeOrphanedLock(lockFile: string): Promise<boolean> {
  const holder = await readFile(lockFile, 'utf8').catch(() => undefined);
  if (holder === undefined || !isOrphaned(holder, '')) return false;
  // Read once more right before: a lock released and taken anew meanwhile names its new, live holder.
  if ((await readFile(lockFile, 'utf8').catch(() => undefined)) !== holder) return false;
  return unlink(lockFile).then(
    () => true,
    () => false,
  );
}

async function tryCreate(lockFile: string, token: string): Promise<boolean> {
  try {
    const handle = await open(lockFile, 'wx', PRIVATE_FILE_MODE);
    try {
      await handle.writeFile(token);
    } finally {
      await handle.close();
    }
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw err;
  }
}

async function isStale(lockFile: string): Promise<boolean> {
  try {
    return Date.now() - (await stat(lockFile)).mtimeMs > STALE_MS;
  } catch {
    return false; // gone meanwhile: the next attempt will take it
  }
}
