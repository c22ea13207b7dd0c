import { randomBytes } from 'node:crypto';
import { link, open, readFile, rename, unlink } from 'node:fs/promises';
import path from 'node:path';

/**
 * Writes `data` to a fresh temp file beside `target` (same directory, hence the same file system, so the later
 * rename/link is atomic) and fsyncs it. The leading dot keeps readers that list a directory from mistaking it for data.
 */
async function writeTemp(target: string, data: string | Buffer): Promise<string> {
  const temp = path.join(path.dirname(target), `.${path.basename(target)}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`);
  const handle = await open(temp, 'wx', 0o644);
  try {
    await handle.writeFile(data);
    await handle.sync();
  } catch (err) {
    await handle.close().catch(() => undefined);
    await unlink(temp).catch(() => undefined);
    throw err;
  }
  await handle.close();
  return temp;
}

/** Makes a rename or link durable: the directory entry itself lives in the directory's data. */
async function syncDirectory(dir: string): Promise<void> {
  let handle;
  try {
    handle = await open(dir, 'r');
    await handle.sync();
  } catch {
    // Some file systems refuse fsync on a directory (EINVAL, EISDIR); the rename is still atomic there.
  } finally {
    await handle?.close().catch(() => undefined);
  }
}

/**
 * Replaces `target` atomically: readers see the old bytes or the new bytes, never a torn file, also if the process
 * dies half-way (temp file, fsync, rename, fsync of the directory).
 */
export async function writeFileAtomic(target: string, data: string | Buffer): Promise<void> {
  const temp = await writeTemp(target, data);
  try {
    await rename(temp, target);
  } catch (err) {
    await unlink(temp).catch(() => undefined);
    throw err;
  }
  await syncDirectory(path.dirname(target));
}

/** What {@link writeFileOnce} found. */
export type WriteOnceResult = { outcome: 'created' } | { outcome: 'identical' } | { outcome: 'different' };

/**
 * Creates `target` with `data` unless it exists, atomically and without ever replacing it. A hard link of the fsynced
 * temp file is the create-if-absent step: unlike rename it fails with EEXIST instead of overwriting, so two writers
 * racing on the same path cannot replace each other's file, and nobody sees a partial one. Existing bytes are compared,
 * so a retried write of the same content is success (`identical`) and different content is reported (`different`).
 */
export async function writeFileOnce(target: string, data: string | Buffer): Promise<WriteOnceResult> {
  const bytes = typeof data === 'string' ? Buffer.from(data, 'utf8') : data;
  const existing = await readIfExists(target);
  if (existing) return { outcome: existing.equals(bytes) ? 'identical' : 'different' };
  const temp = await writeTemp(target, bytes);
  try {
    await link(temp, target);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'EEXIST') {
      const now = await readFile(target);
      return { outcome: now.equals(bytes) ? 'identical' : 'different' };
    }
    if (code !== 'EPERM' && code !== 'ENOTSUP' && code !== 'EOPNOTSUPP') throw err;
    // A file system without hard links: fall back to rename, re-checking right before it (a narrow race remains).
    if (await readIfExists(target)) return writeFileOnce(target, bytes);
    await rename(temp, target);
  } finally {
    await unlink(temp).catch(() => undefined);
  }
  await syncDirectory(path.dirname(target));
  return { outcome: 'created' };
}

async function readIfExists(file: string): Promise<Buffer | undefined> {
  try {
    return await readFile(file);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
}
