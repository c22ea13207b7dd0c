import { randomBytes } from 'node:crypto';
import { lstat, readFile, readlink, realpath, rename, symlink, unlink } from 'node:fs/promises';
import path from 'node:path';
import { assertSafeRelativePath } from './path-safety';

/**
 * Files that decide what node_modules holds. A change touching one of them (at any depth: workspaces have their own)
 * cannot be verified against the live checkout's installed packages.
 */
const DEPENDENCY_FILES: readonly string[] = [
  'package.json',
  'package-lock.json',
  'npm-shrinkwrap.json',
  'yarn.lock',
  'pnpm-lock.yaml',
  'pnpm-workspace.yaml',
  'bun.lock',
  'bun.lockb',
  '.npmrc',
  '.yarnrc',
  '.yarnrc.yml',
  '.pnpmfile.cjs',
];

/** The changed paths that touch dependency files ({@link DEPENDENCY_FILES}), in the order given. */
function dependencyChanges(changedPaths: readonly string[]): string[] {
  return changedPaths.filter((p) => DEPENDENCY_FILES.includes(p.split('/').pop() ?? ''));
}

export type LinkDependenciesResult =
  /** `<worktree>/node_modules` is a symlink to `target` (`created`: by this call; false: it already was). */
  | { status: 'linked'; target: string; created: boolean }
  /** Linking would verify against the wrong packages: install in the worktree (bounded, like a stage) or fail closed. */
  | { status: 'install-needed'; reason: string; paths: string[] };

export interface LinkDependenciesInput {
  /** The live checkout (its node_modules is the default source). */
  repo: string;
  /** The run's worktree, still at the base commit or at the change's commit. */
  worktree: string;
  /** The paths the change writes. */
  changedPaths: readonly string[];
  /**
   * The node_modules to link, when not the live checkout's own: e.g. Forge's own for a copy of examples/agent-repo
   * (its dependencies are a subset of Forge's). When given, the live checkout's manifests are not compared.
   */
  nodeModules?: string;
}

async function readOrNull(file: string): Promise<Buffer | null> {
  return readFile(file).catch((err: NodeJS.ErrnoException) => {
    if (err.code === 'ENOENT' || err.code === 'ENOTDIR') return null;
    throw err;
  });
}

/**
 * Gives the worktree the live checkout's installed packages by a symlink (`<worktree>/node_modules` → the real path
 * of the live one), when that is sound: the change leaves every dependency file alone, and (for the live checkout's
 * own node_modules) its package.json and lock files at the root are the bytes the worktree has. Otherwise reports
 * `install-needed` with the reason; the caller decides whether to install or to fail closed.
 * Idempotent: a link already there to the same target is a success; the link is made under a temp name and renamed,
 * so two concurrent calls both end with one good link. Removing the worktree removes the link, never its target.
 */
export async function linkNodeModules(input: LinkDependenciesInput): Promise<LinkDependenciesResult> {
  input.changedPaths.forEach((p) => assertSafeRelativePath(p));
  const touched = dependencyChanges(input.changedPaths);
  if (touched.length > 0) {
    const reason = `the change touches ${touched.join(', ')}, so the installed packages may not match it`;
    return { status: 'install-needed', reason, paths: touched };
  }
  const source = input.nodeModules ?? path.join(input.repo, 'node_modules');
  const target = await realpath(source).catch(() => null);
  if (!target || !(await lstat(target)).isDirectory()) {
    return { status: 'install-needed', reason: `there is no node_modules directory at ${source} to link`, paths: [] };
  }
  if (input.nodeModules === undefined) {
    const differing: string[] = [];
    for (const name of DEPENDENCY_FILES) {
      const [live, base] = await Promise.all([readOrNull(path.join(input.repo, name)), readOrNull(path.join(input.worktree, name))]);
      if ((live === null) !== (base === null) || (live && base && !live.equals(base))) differing.push(name);
    }
    if (differing.length > 0) {
      return {
        status: 'install-needed',
        reason: `the live checkout's ${differing.join(', ')} differ from the base commit's, so its node_modules may not match`,
        paths: differing,
      };
    }
  }
  const link = path.join(input.worktree, 'node_modules');
  const existing = await lstat(link).catch(() => null);
  if (existing?.isSymbolicLink() && (await readlink(link)) === target) return { status: 'linked', target, created: false };
  if (existing && !existing.isSymbolicLink()) {
    const reason = 'the worktree has a node_modules of its own (committed?), which Forge does not replace';
    return { status: 'install-needed', reason, paths: [] };
  }
  const temp = path.join(input.worktree, `.node_modules.forge-${process.pid}-${randomBytes(6).toString('hex')}`);
  await symlink(target, temp, 'dir');
  try {
    await rename(temp, link);
  } catch (err) {
    await unlink(temp).catch(() => undefined);
    throw err;
  }
  return { status: 'linked', target, created: true };
}
