import { randomBytes } from 'node:crypto';
import { rename, unlink } from 'node:fs/promises';
import path from 'node:path';
import { EmptyChangeError, InvalidInputError, RunStateConflictError, UnsafePathError } from './errors';
import { git, revParse } from './exec';
import { assertIdentity, gitDate, identityEnv, normaliseMessage, type CommitIdentity } from './identity';
import { promoteBranchName } from './names';
import { assertSafeRelativePath, checkProposedPath, writeProposedFile } from './path-safety';
import { withKeyLock } from './run-lock';
import { resolveCommit, runKey, settledInOrder } from './worktree';

/** One file of a proposed change: its repository-relative path and its full new contents. */
export interface ProposedFile {
  path: string;
  content: string | Buffer;
}

export interface CommitChangeInput {
  repo: string;
  runId: string;
  /** The run's worktree (from createWorktree), with `base` checked out. */
  worktree: string;
  /** The commit the change is made on. */
  base: string;
  files: readonly ProposedFile[];
  /** The agent's commit message. */
  message: string;
  /** Author and committer (Forge's fixed identity). */
  identity: CommitIdentity;
  /**
   * Author and committer date. Pass a value that is the same on every retry (e.g. the workflow's start time): the
   * commit id depends on it, and a retry must find the commit it made before.
   */
  date: Date | number;
}

export interface CommitChangeResult {
  /** `forge/promote/<runId>`. */
  branch: string;
  commit: string;
  tree: string;
  base: string;
  /** The paths written, sorted. */
  paths: string[];
  /** `existing`: the branch already held a commit with exactly this tree and parent (a retry). */
  status: 'created' | 'existing';
}

/** Tree entry modes at `commit` for `paths` (absent paths are not in the map). */
async function treeModes(repo: string, commit: string, paths: readonly string[]): Promise<Map<string, string>> {
  const { stdout } = await git(['ls-tree', '-z', '--full-tree', commit, '--', ...paths], { cwd: repo });
  const modes = new Map<string, string>();
  for (const entry of stdout.split('\0')) {
    const tab = entry.indexOf('\t');
    if (tab !== -1) modes.set(entry.slice(tab + 1), entry.split(' ')[0]);
  }
  return modes;
}

/** Writes each file's contents as a blob (a few git processes at a time); their ids, in order. */
async function hashObjects(repo: string, files: readonly ProposedFile[]): Promise<string[]> {
  const ids: string[] = new Array(files.length);
  let next = 0;
  const worker = async () => {
    for (let i = next++; i < files.length; i = next++) {
      ids[i] = (await git(['hash-object', '-w', '--stdin'], { cwd: repo, input: files[i].content })).stdout.trim();
    }
  };
  await Promise.all(Array.from({ length: Math.min(4, files.length) }, worker));
  return ids;
}

async function parentsAndTree(repo: string, commit: string): Promise<{ parents: string[]; tree: string }> {
  const { stdout } = await git(['show', '-s', '--format=%P%n%T', commit], { cwd: repo });
  const [parents, tree] = stdout.trim().split('\n');
  return { parents: parents.trim() === '' ? [] : parents.trim().split(' '), tree: tree.trim() };
}

/** Whether `commit` has exactly `tree` and the single parent `base`: "the same change", whatever its message or date. */
async function isSameChange(repo: string, commit: string, tree: string, base: string): Promise<boolean> {
  const actual = await parentsAndTree(repo, commit);
  return actual.tree === tree && actual.parents.length === 1 && actual.parents[0] === base;
}

/**
 * Applies the proposed contents in the run's worktree and commits them on `forge/promote/<runId>`, one commit whose
 * parent is `base`, with the given identity, date and message (no hooks, no signing).
 *
 * Every path is checked first (text, then the worktree's actual file system: no `..`, no `.git`, no symlink on the
 * way or at the end), so a refused change writes nothing. The commit is computed from the contents (a private index,
 * never the worktree's shared one), then the branch is created only if absent (`update-ref <ref> <commit> ""`), then
 * the files are written (temp name + rename) and the worktree's HEAD and index are moved to the commit.
 *
 * Idempotent: when the branch already holds a commit with exactly this tree and parent, that is a success
 * (`existing`) and the worktree is brought to it. Compensation: delete the branch (cleanupRun).
 * @throws UnsafePathError naming the first refused path (nothing written)
 * @throws EmptyChangeError when there are no files, or they equal what `base` has
 * @throws RunStateConflictError when the run's branch holds another change, or the worktree is at an unrelated commit
 */
export async function commitChange(input: CommitChangeInput): Promise<CommitChangeResult> {
  const branch = promoteBranchName(input.runId);
  const message = normaliseMessage(input.message);
  assertIdentity(input.identity);
  const date = gitDate(input.date);
  if (input.files.length === 0) throw new EmptyChangeError('the change has no files');
  const seen = new Set<string>();
  for (const file of input.files) {
    assertSafeRelativePath(file.path);
    if (seen.has(file.path)) throw new UnsafePathError(file.path, 'it is listed twice');
    seen.add(file.path);
    if (typeof file.content !== 'string' && !Buffer.isBuffer(file.content)) {
      throw new InvalidInputError(`content of ${file.path}`, undefined, 'it must be a string or a Buffer');
    }
  }
  const paths = [...seen].sort();

  return withKeyLock(await runKey(input.repo, input.runId), async () => {
    // Each read is a git process: the independent ones at once (the first error in this order wins).
    const [base, worktreeHead, gitDir] = await settledInOrder([
      resolveCommit(input.repo, input.base),
      revParse(input.worktree, 'HEAD'),
      git(['rev-parse', '--absolute-git-dir'], { cwd: input.worktree }).then((r) => r.stdout.trim()),
    ] as const);
    const ref = `refs/heads/${branch}`;
    const [baseModes, baseTree, existing] = await settledInOrder([
      treeModes(input.repo, base, paths),
      git(['rev-parse', `${base}^{tree}`], { cwd: input.repo }).then((r) => r.stdout.trim()),
      revParse(input.repo, ref),
      // All checks before any write: a change with one bad path changes nothing.
      ...input.files.map((file) => checkProposedPath(input.worktree, file.path)),
    ] as const);
    for (const [p, mode] of baseModes) {
      if (mode !== '100644' && mode !== '100755') {
        const what = mode === '120000' ? 'a symlink' : mode === '160000' ? 'a submodule' : 'a directory';
        throw new UnsafePathError(p, `it is ${what} in the base commit`);
      }
    }

    const tempIndex = path.join(gitDir, `forge-index-${process.pid}-${randomBytes(6).toString('hex')}`);
    const indexEnv = { GIT_INDEX_FILE: tempIndex };
    try {
      // The tree of base + the proposed contents, in a private index: concurrent calls never meet on index.lock.
      // The blobs are written while the private index is read from the base.
      const [, blobs] = await settledInOrder([git(['read-tree', base], { cwd: input.worktree, env: indexEnv }), hashObjects(input.repo, input.files)] as const);
      const entries = input.files.map((file, i) => `${baseModes.get(file.path) ?? '100644'} ${blobs[i]}\t${file.path}\0`).join('');
      await git(['update-index', '-z', '--index-info'], { cwd: input.worktree, env: indexEnv, input: entries });
      const tree = (await git(['write-tree'], { cwd: input.worktree, env: indexEnv })).stdout.trim();
      if (tree === baseTree) throw new EmptyChangeError('the proposed contents are what the base commit already has');

      let commit: string;
      let status: CommitChangeResult['status'] = 'existing';
      if (worktreeHead !== base && (existing === null || worktreeHead !== existing)) {
        const at = worktreeHead ?? 'no commit';
        throw new RunStateConflictError(input.runId, `the worktree ${input.worktree} is at ${at}, not at the base ${base}`);
      }
      if (existing) {
        if (!(await isSameChange(input.repo, existing, tree, base))) {
          const what = `the branch ${branch} already holds ${existing}, which is not this change on ${base}`;
          throw new RunStateConflictError(input.runId, what);
        }
        commit = existing;
      } else {
        commit = (
          await git(['commit-tree', '--no-gpg-sign', tree, '-p', base], {
            cwd: input.repo,
            input: message,
            env: identityEnv({ ...input.identity, date }),
          })
        ).stdout.trim();
        // The empty old value: create the branch only if it does not exist (a racing call may have made it).
        const created = await git(['update-ref', '-m', `forge promote ${input.runId}: commit`, ref, commit, ''], {
          cwd: input.repo,
          okExitCodes: [1, 128],
        });
        if (created.exitCode === 0) status = 'created';
        else {
          const now = await revParse(input.repo, ref);
          if (!now || !(await isSameChange(input.repo, now, tree, base))) {
            const what = `the branch ${branch} was created meanwhile with ${now ?? 'nothing'}, not this change`;
            throw new RunStateConflictError(input.runId, what);
          }
          commit = now;
        }
      }

      if (worktreeHead !== commit) {
        for (const file of input.files) {
          await writeProposedFile(input.worktree, file.path, file.content, { executable: baseModes.get(file.path) === '100755' });
        }
        // The private index now holds the commit's tree: refresh its file stats against the written files and make it
        // the worktree's index (a rename, as git itself replaces an index), then move the worktree's HEAD.
        await git(['update-index', '-q', '--refresh'], { cwd: input.worktree, env: indexEnv, okExitCodes: [1] });
        await rename(tempIndex, path.join(gitDir, 'index'));
        await git(['update-ref', '--no-deref', '-m', `forge promote ${input.runId}`, 'HEAD', commit], { cwd: input.worktree });
      }
      return { branch, commit, tree, base, paths, status };
    } finally {
      await unlink(tempIndex).catch(() => undefined);
    }
  });
}
