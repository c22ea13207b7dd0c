import { setTimeout as sleep } from 'node:timers/promises';
import { InvalidInputError } from './errors';
import { git, isAncestor, revParse } from './exec';
import { assertBranchName } from './names';
import { resolveCommits } from './worktree';

export interface CompareAndSwapInput {
  repo: string;
  /** The target branch (short name, e.g. `main`). */
  branch: string;
  /** The commit the branch must still be at: the base the tested commit was made on. */
  base: string;
  /** The commit that passed verification; a descendant of `base`. */
  tested: string;
  /** The reflog line of the move (default `forge promote: <tested>`). */
  reason?: string;
}

export type CompareAndSwapResult =
  /** The branch moved from `base` to `tested`, by this call. */
  | { status: 'merged'; branch: string; commit: string; previous: string }
  /** The branch already holds `tested` (it points at it, or at a descendant of it): an earlier call merged it. */
  | { status: 'already-merged'; branch: string; commit: string; head: string }
  /** The branch is at neither: someone moved it. Rebase onto `head` and verify again; `head` null: it was deleted. */
  | { status: 'branch-moved'; branch: string; head: string | null; expected: string };

/** How often a CAS that lost to a concurrent ref lock (not to a move) is tried again before giving up. */
const LOCK_ATTEMPTS = 5;

/**
 * Moves `refs/heads/<branch>` from `base` to `tested` in one compare-and-swap (`git update-ref <ref> <tested>
 * <base>`): the branch only ever points at a tested commit, and never loses a commit someone else put there.
 * Idempotent: a branch already at (or beyond) `tested` is `already-merged`; a branch moved elsewhere is a
 * `branch-moved` result carrying the new head, not an error. The live checkout's files are not touched (see
 * live-checkout.ts: inspect before, advance after).
 * @throws InvalidInputError when `tested` does not descend from `base` (the move would not be a fast-forward)
 * @throws CommitNotFoundError, GitCommandError (infrastructure: retry)
 */
export async function compareAndSwapBranch(input: CompareAndSwapInput): Promise<CompareAndSwapResult> {
  assertBranchName(input.branch);
  const [base, tested] = await resolveCommits(input.repo, [input.base, input.tested]);
  if (!(await isAncestor(input.repo, base, tested))) throw notFastForward(input.branch, base, tested);
  return swapBranch(input.repo, input.branch, base, tested, input.reason);
}

/** Why `tested` cannot be merged: it does not descend from `base`. */
export function notFastForward(branch: string, base: string, tested: string): InvalidInputError {
  const why = `it does not descend from the base ${base}, so moving ${branch} to it would not be a fast-forward`;
  return new InvalidInputError('tested', tested, why);
}

/**
 * The compare-and-swap of {@link compareAndSwapBranch} for commits already resolved and checked (full ids, `tested`
 * descending from `base`).
 */
export async function swapBranch(repo: string, branch: string, base: string, tested: string, reason?: string): Promise<CompareAndSwapResult> {
  const ref = `refs/heads/${branch}`;
  const reflog = reason ?? `forge promote: ${tested}`;
  for (let attempt = 1; ; attempt++) {
    const swap = await git(['update-ref', '-m', reflog, ref, tested, base], { cwd: repo, okExitCodes: [1, 128] });
    if (swap.exitCode === 0) return { status: 'merged', branch, commit: tested, previous: base };
    const head = await revParse(repo, `${ref}^{commit}`);
    if (head && (head === tested || (await isAncestor(repo, tested, head)))) {
      return { status: 'already-merged', branch, commit: tested, head };
    }
    if (head !== base) return { status: 'branch-moved', branch, head, expected: base };
    // Still at base, yet the swap failed: another process held the ref's lock for a moment.
    if (attempt >= LOCK_ATTEMPTS) {
      await git(['update-ref', '-m', reflog, ref, tested, base], { cwd: repo });
      return { status: 'merged', branch, commit: tested, previous: base };
    }
    await sleep(20 * attempt);
  }
}
