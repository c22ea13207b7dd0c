import { lstat, readdir, realpath } from 'node:fs/promises';
import path from 'node:path';
import { git } from './exec';
import { PROMOTE_BRANCH_PREFIX, promoteBranchName } from './names';
import { withKeyLock } from './run-lock';
import { defaultWorktreeRoot, listWorktrees, removeWorktree, runKey, type RegisteredWorktree } from './worktree';

export interface CleanupRunInput {
  repo: string;
  runId: string;
  /** The worktree root the run used; {@link defaultWorktreeRoot} when absent. */
  root?: string;
}

export interface CleanupRunResult {
  /** Whether a worktree (registered, or only its directory) was there to remove. */
  worktreeRemoved: boolean;
  /** Whether the run's branch existed and was deleted. */
  branchDeleted: boolean;
}

/**
 * Removes everything a run may have left: its worktree (forced) and directory, git's records of worktrees whose
 * directories are gone (`git worktree prune`), and its branch `forge/promote/<runId>`. Each part is a no-op success
 * when already gone, so it is safe after a success, a failure, a kill at any point, or for a run that never made any
 * of them; and safe to call twice, also concurrently. Never touches the target branch or the live checkout.
 */
export async function cleanupRun(input: CleanupRunInput): Promise<CleanupRunResult> {
  const branch = promoteBranchName(input.runId);
  const { removed } = await removeWorktree(input);
  const branchDeleted = await withKeyLock(await runKey(input.repo, input.runId), async () => {
    const ref = `refs/heads/${branch}`;
    const { stdout } = await git(['for-each-ref', '--format=%(objectname)', ref], { cwd: input.repo });
    if (stdout.trim() === '') return false;
    // No expected old value: whatever the branch holds, the run is over. Deleting a ref that is already gone succeeds.
    await git(['update-ref', '-d', '-m', `forge promote ${input.runId}: cleanup`, ref], { cwd: input.repo });
    return true;
  });
  return { worktreeRemoved: removed, branchDeleted };
}

export interface Leftovers {
  /** Registered worktrees other than the repository's main one. */
  worktrees: RegisteredWorktree[];
  /** `forge/promote/*` branches with their commits. */
  branches: { name: string; commit: string }[];
  /** Entries (file names) directly under the worktree root; empty when the root does not exist. */
  rootEntries: string[];
}

/**
 * What promotion runs left in a repository and under the worktree root: for tests and the chaos harness (after
 * every run, all three lists should be empty), and for an operator sweeping up by run id.
 */
export async function listLeftovers(input: { repo: string; root?: string }): Promise<Leftovers> {
  const root = input.root ?? defaultWorktreeRoot();
  const worktrees = (await listWorktrees(input.repo)).filter((w) => !w.main);
  const format = '--format=%(refname)%00%(objectname)';
  const { stdout } = await git(['for-each-ref', format, `refs/heads/${PROMOTE_BRANCH_PREFIX}`], { cwd: input.repo });
  const branches = stdout
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => {
      const [ref, commit] = line.split('\0');
      return { name: ref.slice('refs/heads/'.length), commit };
    });
  const rootExists = await lstat(root).then(
    () => true,
    () => false,
  );
  const rootEntries = rootExists ? (await readdir(await realpath(root))).sort() : [];
  return { worktrees, branches, rootEntries: rootEntries.map((e) => path.basename(e)) };
}
