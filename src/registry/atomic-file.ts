import { randomBytes } from 'node:crypto';
import { link, open, readdir, readFile, rename, unlink } from 'node:fs/promises';
import path from 'node:path';
import { liveProcess } from '../process/live-process';
import { PRIVATE_FILE_MODE } from '../contract/private-modes';

/**
 * Writes `data` to a fresh temp file beside `target` (same directory, hence the same file system, so the later
 * rename/link is atomic) and fsyncs it. The leading dot keeps readers that list a directory from mistaking it for data.
 */
async function writeTemp(target: string, data: string | Buffer): Promise<string> {
  const temp = path.join(path.dirname(target), `.${path.basename(target)}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`);
  // Other tools' code, private as the directories of agent-tools/ are (TOOL_CONTRACT.md, "What a tool can reach").
  const handle = await open(temp, 'wx', PRIVATE_FILE_MODE);
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

/** The temp files writeTemp makes: `.<name>.<pid>.<12 hex>.tmp`. */
const TEMP_FILE = /^\..+\.(\d+)\.[0-9a-f]{12}\.tmp$/;

/** Whether the process `pid` has ended (gone, or a zombie its parent has not reaped yet). */
function writerEnded(pid: number): boolean {
  return pid !== process.pid && liveProcess(pid) === undefined;
}

/**
 * Removes what writers killed between writing a temp file and renaming it left behind in `dir` and the directories
 * directly under it (agent-tools/ and its tool directories): temp files whose process has ended. A live writer's are
 * left alone. Resolves with what it removed; never throws.
 */
export async function sweepDeadWritersTempFiles(dir: string): Promise<string[]> {
  const removed: string[] = [];
  const sweep = async (d: string, depth: number): Promise<void> => {
    const entries = await readdir(d, { withFileTypes: true }).catch(() => []);
    for (const e of entries) {
      const full = path.join(d, e.name);
      if (e.isDirectory() && depth === 0) await sweep(full, 1);
      const m = e.isFile() ? TEMP_FILE.exec(e.name) : null;
      if (
        m &&
        writerEnded(Number(m[1])) &&
        (await unlink(full).then(
          () => true,
          () => false,
        ))
      )
        removed.push(path.relative(dir, full));
    }
  };
  await sweep(dir, 0);
  return removed;
}
