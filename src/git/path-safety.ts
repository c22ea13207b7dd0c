import { randomBytes } from 'node:crypto';
import { lstat, mkdir, open, readlink, realpath, rename, unlink } from 'node:fs/promises';
import path from 'node:path';
import type { Stats } from 'node:fs';
import { UnsafePathError } from './errors';

const MAX_PATH_BYTES = 4096;
const MAX_SEGMENT_BYTES = 255;

/**
 * Whether a path segment would name git's own directory: `.git` in any case, also as Windows and macOS file systems
 * would read it (trailing dots or spaces, the 8.3 short name `git~1`), as git itself refuses them.
 */
function isGitDirName(segment: string): boolean {
  const folded = segment.toLowerCase().replace(/[. ]+$/u, '');
  return folded === '.git' || folded === 'git~1';
}

/**
 * Checks the text of a proposed path, with no file system access: a plain relative path with `/` separators that
 * stays inside the repository and outside `.git`.
 * Refused: empty, absolute, `\`, control characters, a leading `-` (it could read as an option where changed paths
 * become arguments), empty / `.` / `..` segments (paths are taken literally, never normalised), any `.git` segment.
 * @throws UnsafePathError naming the path and the reason
 */
export function assertSafeRelativePath(p: unknown): asserts p is string {
  const fail = (reason: string): never => {
    throw new UnsafePathError(typeof p === 'string' ? p : String(p), reason);
  };
  if (typeof p !== 'string' || p === '') return fail('a path must be a non-empty string');
  if (Buffer.byteLength(p) > MAX_PATH_BYTES) fail(`it is longer than ${MAX_PATH_BYTES} bytes`);
  // eslint-disable-next-line no-control-regex
  if (/[\x00-\x1f\x7f]/u.test(p)) fail('it contains a control character');
  if (p.startsWith('/')) fail('it is absolute; give a path relative to the repository root');
  if (p.includes('\\')) fail('it contains "\\"; use "/" between directories');
  if (p.startsWith('-')) fail('it starts with "-"');
  for (const segment of p.split('/')) {
    if (segment === '' || segment === '.') fail('it has an empty or "." segment; give the plain path (no "//", "./" or trailing "/")');
    if (segment === '..') fail('it has a ".." segment, which could lead out of the repository');
    if (isGitDirName(segment)) fail('it is inside .git, which only git may change');
    if (Buffer.byteLength(segment) > MAX_SEGMENT_BYTES) fail(`a segment is longer than ${MAX_SEGMENT_BYTES} bytes`);
  }
}

async function lstatOrNull(file: string): Promise<Stats | null> {
  try {
    return await lstat(file);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw err;
  }
}

/** Where a symlink leads, and whether that is inside `root`, for the error message. */
async function describeLink(root: string, link: string): Promise<{ target: string; outside: boolean }> {
  const target = await readlink(link);
  const resolved = path.resolve(path.dirname(link), target);
  const real = await realpath(resolved).catch(() => resolved);
  const rel = path.relative(root, real);
  return { target, outside: rel === '..' || rel.startsWith(`..${path.sep}`) || path.isAbsolute(rel) };
}

/** What {@link checkProposedPath} found at a proposed path. */
export interface ProposedPathInfo {
  /** The absolute path in the checked directory (under its real path). */
  absolute: string;
  /** Whether a regular file is there now (false: it will be created, with any missing directories). */
  exists: boolean;
  /** Whether the existing file has an execute bit (its replacement keeps it). */
  executable: boolean;
}

/**
 * Checks a proposed path against the actual file system under `root` (a worktree): after
 * {@link assertSafeRelativePath}, every existing component must be a real directory (no symlink, wherever it leads:
 * one out of the repository is an escape, one inside would put the file somewhere other than the path git records),
 * and the last component, if it exists, a regular file (not a symlink, which Forge never follows nor replaces, nor a
 * directory).
 * @throws UnsafePathError naming the path and the reason
 */
export async function checkProposedPath(root: string, rel: string): Promise<ProposedPathInfo> {
  assertSafeRelativePath(rel);
  const realRoot = await realpath(root);
  const segments = rel.split('/');
  let current = realRoot;
  for (let i = 0; i < segments.length; i++) {
    current = path.join(current, segments[i]);
    const shown = segments.slice(0, i + 1).join('/');
    const last = i === segments.length - 1;
    const stats = await lstatOrNull(current);
    if (!stats) return { absolute: path.join(realRoot, ...segments), exists: false, executable: false };
    if (stats.isSymbolicLink()) {
      const { target, outside } = await describeLink(realRoot, current);
      const where = outside ? 'which leads out of the repository' : 'Forge neither follows nor replaces symlinks; name the real path';
      const what = last ? `it is a symlink (→ ${target}); ${where}` : `it goes through the symlink ${shown} (→ ${target}), ${where}`;
      throw new UnsafePathError(rel, what);
    }
    if (!last && !stats.isDirectory()) throw new UnsafePathError(rel, `${shown} is a file, not a directory`);
    if (last && stats.isDirectory()) throw new UnsafePathError(rel, 'it is a directory');
    if (last && !stats.isFile()) throw new UnsafePathError(rel, 'it exists and is not a regular file');
    if (last) return { absolute: current, exists: true, executable: (stats.mode & 0o111) !== 0 };
  }
  throw new Error('unreachable');
}

/** Creates the missing directories of `rel`'s parent one at a time, refusing anything but a real directory on the way. */
async function makeParents(realRoot: string, rel: string): Promise<void> {
  const segments = rel.split('/').slice(0, -1);
  let current = realRoot;
  for (const [i, segment] of segments.entries()) {
    current = path.join(current, segment);
    try {
      await mkdir(current);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
    const stats = await lstat(current);
    if (stats.isSymbolicLink() || !stats.isDirectory()) {
      throw new UnsafePathError(rel, `${segments.slice(0, i + 1).join('/')} is not a real directory`);
    }
  }
}

/**
 * Writes `content` at `rel` under `root` after {@link checkProposedPath}: missing directories are created, the file
 * is written to a fresh temp name beside it (O_EXCL, so never through a link) and renamed into place, which replaces
 * the directory entry instead of following it. Idempotent: writing the same bytes again leaves the same file.
 * @returns the absolute path written
 * @throws UnsafePathError
 */
export async function writeProposedFile(root: string, rel: string, content: string | Buffer, options: { executable?: boolean } = {}): Promise<string> {
  const info = await checkProposedPath(root, rel);
  const realRoot = await realpath(root);
  await makeParents(realRoot, rel);
  const target = info.absolute;
  const tempName = `.${path.basename(target).slice(0, 200)}.forge-${process.pid}-${randomBytes(6).toString('hex')}.tmp`;
  const temp = path.join(path.dirname(target), tempName);
  const mode = (options.executable ?? info.executable) ? 0o755 : 0o644;
  const handle = await open(temp, 'wx', mode);
  try {
    try {
      await handle.writeFile(content);
    } finally {
      await handle.close();
    }
    // Checked again just before the rename: the entry must still not be a symlink or a directory.
    const now = await lstatOrNull(target);
    if (now && !now.isFile()) throw new UnsafePathError(rel, 'it stopped being a regular file while being written');
    await rename(temp, target);
  } catch (err) {
    await unlink(temp).catch(() => undefined);
    throw err;
  }
  return target;
}
