import { accessSync, constants, statSync } from 'node:fs';
import { lstat, mkdir, realpath, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { BranchNotFoundError, CommitNotFoundError, GitCommandError, InvalidInputError, WorktreeRootError } from './errors';
import { git, revParse } from './exec';
import { assertBranchName, assertRunId } from './names';
import { withKeyLock } from './run-lock';

/** The directory under the root that holds worktrees, one per run, named by the run id. */
const ROOT_DIR_NAME = 'forge-worktrees';

/**
 * Where worktrees go by default: `/dev/shm/forge-worktrees` when /dev/shm is a writable directory (tmpfs: creating a
 * worktree's files there is ~70x faster than on a disk), else `forge-worktrees` under the OS temp directory.
 */
export function defaultWorktreeRoot(): string {
  try {
    if (statSync('/dev/shm').isDirectory()) {
      accessSync('/dev/shm', constants.W_OK);
      return path.join('/dev/shm', ROOT_DIR_NAME);
    }
  } catch {
    // no /dev/shm, or not writable
  }
  return path.join(tmpdir(), ROOT_DIR_NAME);
}

/** A worktree git has registered for the repository (`git worktree list --porcelain`). */
export interface RegisteredWorktree {
  path: string;
  /** The commit checked out, or null (bare entry, or a worktree whose HEAD is unborn). */
  head: string | null;
  /** `refs/heads/...` when a branch is checked out, null when detached. */
  branch: string | null;
  /** The repository's own (first) worktree, or the bare repository itself. */
  main: boolean;
  bare: boolean;
  /** The lock reason ('' for a lock without one), or null when not locked. `initializing` marks an unfinished add. */
  locked: string | null;
  /** Its directory is gone: `git worktree prune` would drop it. */
  prunable: boolean;
}

/** Every worktree registered in `repo`, the main one first. */
export async function listWorktrees(repo: string): Promise<RegisteredWorktree[]> {
  const { stdout } = await git(['worktree', 'list', '--porcelain', '-z'], { cwd: repo });
  const worktrees: RegisteredWorktree[] = [];
  let current: RegisteredWorktree | null = null;
  for (const field of stdout.split('\0')) {
    if (field === '') {
      current = null;
      continue;
    }
    const space = field.indexOf(' ');
    const key = space === -1 ? field : field.slice(0, space);
    const value = space === -1 ? '' : field.slice(space + 1);
    if (key === 'worktree') {
      current = { path: value, head: null, branch: null, main: worktrees.length === 0, bare: false, locked: null, prunable: false };
      worktrees.push(current);
    } else if (current) {
      if (key === 'HEAD') current.head = /^0+$/.test(value) ? null : value;
      else if (key === 'branch') current.branch = value;
      else if (key === 'bare') current.bare = true;
      else if (key === 'locked') current.locked = value;
      else if (key === 'prunable') current.prunable = true;
    }
  }
  return worktrees;
}

/** Whether `repo` is a git checkout (a missing directory, or one outside any repository, is not). */
export async function isRepository(repo: string): Promise<boolean> {
  const top = await git(['rev-parse', '--show-toplevel'], { cwd: repo, okExitCodes: [128] }).catch(() => undefined);
  return top?.exitCode === 0;
}

/**
 * The branch the repository's live checkout has checked out: where a promotion goes when the caller names none.
 * @throws InvalidInputError when HEAD is detached (there is no branch to promote into)
 */
export async function checkedOutBranch(repo: string): Promise<string> {
  const { stdout, exitCode } = await git(['symbolic-ref', '--quiet', '--short', 'HEAD'], { cwd: repo, okExitCodes: [1] });
  if (exitCode !== 0 || stdout.trim() === '') {
    throw new InvalidInputError('branch', undefined, `the checkout at ${repo} has no branch checked out (HEAD is detached); name the branch`);
  }
  return stdout.trim();
}

/**
 * The commit a branch points at now.
 * @throws BranchNotFoundError when there is no such branch
 */
export async function resolveBranchCommit(repo: string, branch: string): Promise<string> {
  assertBranchName(branch);
  const commit = await revParse(repo, `refs/heads/${branch}^{commit}`);
  if (!commit) throw new BranchNotFoundError(repo, branch);
  return commit;
}

/** The full id of the commit `rev` names. @throws CommitNotFoundError */
export async function resolveCommit(repo: string, rev: string): Promise<string> {
  const commit = rev.startsWith('-') ? null : await revParse(repo, `${rev}^{commit}`);
  if (!commit) throw new CommitNotFoundError(repo, rev);
  return commit;
}

/**
 * Each of `revs` resolved as {@link resolveCommit} does, the git processes at once; an error is the first rev's in
 * order (not whichever process ended first), so the outcome does not depend on timing.
 * @throws CommitNotFoundError
 */
export async function resolveCommits(repo: string, revs: readonly string[]): Promise<string[]> {
  return settledInOrder(revs.map((rev) => resolveCommit(repo, rev)));
}

/** The values of `work` (started together); when some fail, the error of the first in order. */
export async function settledInOrder<T extends readonly unknown[]>(work: readonly [...{ [K in keyof T]: Promise<T[K]> }]): Promise<T>;
export async function settledInOrder<T>(work: readonly Promise<T>[]): Promise<T[]>;
export async function settledInOrder(work: readonly Promise<unknown>[]): Promise<unknown[]> {
  const settled = await Promise.allSettled(work);
  const failed = settled.find((r) => r.status === 'rejected');
  if (failed) throw failed.reason;
  return settled.map((r) => (r as PromiseFulfilledResult<unknown>).value);
}

/** The key under which calls for one run of one repository take turns (see run-lock.ts). */
export async function runKey(repo: string, runId: string): Promise<string> {
  return `run\0${await realpath(repo)}\0${runId}`;
}

async function makeRoot(root: string): Promise<string> {
  await mkdir(root, { recursive: true });
  return realpath(root);
}

/** The real path of the repository's top level; for a bare repository, its git directory. */
async function repositoryTop(repo: string): Promise<string> {
  const [where, toplevel] = await Promise.all([
    git(['rev-parse', '--is-bare-repository', '--absolute-git-dir'], { cwd: repo }),
    // A bare repository has no top level (git says so with 128): then its git directory stands for it.
    git(['rev-parse', '--show-toplevel'], { cwd: repo, okExitCodes: [128] }),
  ]);
  const [bare, gitDir] = where.stdout.trim().split('\n');
  if (bare !== 'true' && toplevel.exitCode !== 0) throw new GitCommandError(['rev-parse', '--show-toplevel'], repo, toplevel.exitCode, toplevel.stderr);
  return realpath(bare === 'true' ? gitDir : toplevel.stdout.trim());
}

/** `realRoot`, unless it is inside the repository's top level `top`. @throws WorktreeRootError */
function checkedRoot(root: string, realRoot: string, top: string): string {
  const rel = path.relative(top, realRoot);
  if (rel === '' || !(rel === '..' || rel.startsWith(`..${path.sep}`) || path.isAbsolute(rel))) {
    throw new WorktreeRootError(root, `it is inside the repository (${top}); choose a directory outside it`);
  }
  return realRoot;
}

/**
 * The commit `rev` names and the repository's top level, in one git process where the repository has a work tree
 * (each git call is a process: most of what createWorktree adds to `git worktree add`).
 * @throws CommitNotFoundError
 */
async function resolveForWorktree(repo: string, rev: string): Promise<{ commit: string; top: string }> {
  if (rev.startsWith('-')) throw new CommitNotFoundError(repo, rev);
  const args = ['rev-parse', '--is-bare-repository', '--absolute-git-dir', '--show-toplevel', '--verify', '--quiet', '--end-of-options', `${rev}^{commit}`];
  const asked = await git(args, { cwd: repo, okExitCodes: [1, 128] });
  if (asked.exitCode === 128) {
    // A bare repository (no top level), or no repository at all: ask apart, each question with its own error.
    const [commit, top] = await Promise.all([resolveCommit(repo, rev), repositoryTop(repo)]);
    return { commit, top };
  }
  const [, , top, commit] = asked.stdout.trim().split('\n');
  if (asked.exitCode !== 0 || !commit) throw new CommitNotFoundError(repo, rev);
  return { commit, top: await realpath(top) };
}

/** Where the run's worktree lives under `realRoot` (the root's real path, see {@link checkedRoot}). */
function worktreePath(realRoot: string, runId: string): string {
  assertRunId(runId);
  return path.join(realRoot, runId);
}

async function exists(p: string): Promise<boolean> {
  return lstat(p).then(
    () => true,
    () => false,
  );
}

/** Removes a registered worktree (twice forced: also a locked one, e.g. an add killed half-way), then its directory. */
async function dropWorktree(repo: string, target: string, registered: boolean): Promise<void> {
  if (registered) {
    await git(['worktree', 'remove', '--force', '--force', target], { cwd: repo }).catch((err: unknown) => {
      // Already gone, or its directory was deleted by hand: the prune below drops what is left.
      if (!(err instanceof GitCommandError)) throw err;
    });
  }
  // fs.rm does not follow symlinks (such as the node_modules link): it removes the link, never what it points at.
  await rm(target, { recursive: true, force: true, maxRetries: 3 });
  await git(['worktree', 'prune'], { cwd: repo });
}

export interface CreateWorktreeInput {
  /** The live repository (its checkout or its git directory). */
  repo: string;
  runId: string;
  /** The commit to check out (detached): the base commit, or a rebased commit for a re-verification round. */
  commit: string;
  /** Where worktrees go; {@link defaultWorktreeRoot} when absent. Must be outside the repository's checkout. */
  root?: string;
}

export interface CreateWorktreeResult {
  /** The worktree's directory: `<real root>/<runId>`. */
  path: string;
  /** The full id of the commit checked out. */
  commit: string;
  /** `existing`: it was already there at that commit; `recreated`: it was there at another commit, or half made. */
  status: 'created' | 'existing' | 'recreated';
}

/**
 * Makes sure the run has a worktree at `<root>/<runId>` with `commit` checked out, detached (no branch is checked
 * out in it, so the run's branch can always be moved or deleted). Idempotent: a worktree already there at that commit
 * is a success and is left as it is. One there at another commit (an earlier round), one whose add was killed
 * half-way, or an unregistered directory in its place is removed and made afresh.
 * Compensation: {@link removeWorktree} (or cleanupRun).
 * @throws CommitNotFoundError, WorktreeRootError, InvalidInputError (run id), GitCommandError
 */
export async function createWorktree(input: CreateWorktreeInput): Promise<CreateWorktreeResult> {
  assertRunId(input.runId);
  return withKeyLock(await runKey(input.repo, input.runId), async () => {
    const root = input.root ?? defaultWorktreeRoot();
    const [madeRoot, { commit, top }] = await Promise.all([makeRoot(root), resolveForWorktree(input.repo, input.commit)]);
    const target = worktreePath(checkedRoot(root, madeRoot, top), input.runId);
    // The usual case, a first call: nothing at the target. Then only `git worktree add`; should git refuse (a record
    // of a worktree there whose directory is gone, or another process's add in between), the careful way below.
    if (!(await exists(target))) {
      const added = await git(['worktree', 'add', '--detach', '--quiet', target, commit], { cwd: input.repo }).then(
        () => true,
        (err: unknown) => {
          if (err instanceof GitCommandError) return false;
          throw err;
        },
      );
      if (added) return { path: target, commit, status: 'created' };
    }
    const found = (await listWorktrees(input.repo)).find((w) => w.path === target);
    let status: CreateWorktreeResult['status'] = 'created';
    const whole = found && found.locked !== 'initializing' && !found.prunable && (await exists(path.join(target, '.git')));
    if (found && whole && found.head === commit) {
      return { path: target, commit, status: 'existing' };
    }
    if (found || (await exists(target))) {
      await dropWorktree(input.repo, target, found !== undefined);
      status = 'recreated';
    }
    try {
      await git(['worktree', 'add', '--detach', '--quiet', target, commit], { cwd: input.repo });
    } catch (err) {
      // Another process may have made it meanwhile: its result is as good as ours.
      const now = (await listWorktrees(input.repo)).find((w) => w.path === target);
      if (now && now.head === commit && now.locked !== 'initializing') return { path: target, commit, status: 'existing' };
      throw err;
    }
    return { path: target, commit, status };
  });
}

export interface RemoveWorktreeInput {
  repo: string;
  runId: string;
  root?: string;
}

/**
 * Removes the run's worktree (forced: local changes and untracked files go with it), its directory and git's record of
 * it, then prunes records of worktrees whose directories are gone. A no-op success when there is nothing to remove,
 * also for a run that never made one.
 * @returns whether anything was there to remove
 */
export async function removeWorktree(input: RemoveWorktreeInput): Promise<{ removed: boolean }> {
  assertRunId(input.runId);
  return withKeyLock(await runKey(input.repo, input.runId), async () => {
    const root = input.root ?? defaultWorktreeRoot();
    const realRoot = (await exists(root)) ? await realpath(root) : path.resolve(root);
    const target = worktreePath(realRoot, input.runId);
    const found = (await listWorktrees(input.repo)).find((w) => w.path === target);
    const there = found !== undefined || (await exists(target));
    await dropWorktree(input.repo, target, found !== undefined);
    return { removed: there };
  });
}
