import { RunStateConflictError } from './errors';
import { git, isAncestor, revParse } from './exec';
import { identityEnv } from './identity';
import { promoteBranchName } from './names';
import { withKeyLock } from './run-lock';
import { resolveCommit, runKey } from './worktree';

export interface RebaseChangeInput {
  repo: string;
  runId: string;
  /** The target branch's new head, to put the change on. */
  onto: string;
}

export type RebaseChangeResult =
  /** The run's branch now holds the change on `onto`: verify `commit` again (recreate the worktree at it first). */
  | { status: 'rebased'; commit: string; previous: string; onto: string }
  /** The change already sits on `onto` (an earlier call rebased it). */
  | { status: 'up-to-date'; commit: string; onto: string }
  /** It does not apply cleanly: `paths` were changed on both sides (or the history no longer has the change's base). */
  | { status: 'conflict'; onto: string; paths: string[]; reason: string }
  /** `onto` already has every line of the change: nothing is left to promote. */
  | { status: 'empty'; onto: string; reason: string };

interface Signature {
  name: string;
  email: string;
  date: string;
}

/** The author, committer and message of a commit, byte for byte, so the rebased commit says the same. */
async function readCommit(repo: string, commit: string): Promise<{ author: Signature; committer: Signature; message: string; parents: string[] }> {
  const { stdout } = await git(['cat-file', 'commit', commit], { cwd: repo });
  const split = stdout.indexOf('\n\n');
  const headers = (split === -1 ? stdout : stdout.slice(0, split)).split('\n');
  const message = split === -1 ? '' : stdout.slice(split + 2);
  const signature = (kind: string): Signature => {
    const line = headers.find((h) => h.startsWith(`${kind} `)) ?? '';
    const match = /^\w+ (.*) <(.*)> (\d+) ([+-]\d{4})$/u.exec(line);
    if (!match) throw new Error(`commit ${commit} has no readable ${kind} line`);
    return { name: match[1], email: match[2], date: `@${match[3]} ${match[4]}` };
  };
  const parents = headers.filter((h) => h.startsWith('parent ')).map((h) => h.slice('parent '.length));
  return { author: signature('author'), committer: signature('committer'), message, parents };
}

/**
 * Puts the run's change on a new head of the target branch, for another verification round after a compare-and-swap
 * found the branch moved. A three-way merge of the change into `onto` (`git merge-tree --write-tree`, no worktree and
 * no index involved), committed with the original author, committer, dates and message, so the result is the same
 * commit whenever it is computed; then the run's branch is moved to it by compare-and-swap.
 * The run's worktree is not touched: call createWorktree with the new commit, which replaces it with a fresh one
 * (stages of the previous round may have left anything in the old one).
 * Idempotent: a change already on `onto` is `up-to-date`. Conflicts and an emptied change are results, not errors.
 * @throws RunStateConflictError when the run has no branch, or its commit is not a single-parent change
 */
export async function rebaseChange(input: RebaseChangeInput): Promise<RebaseChangeResult> {
  const branch = promoteBranchName(input.runId);
  const ref = `refs/heads/${branch}`;
  return withKeyLock(await runKey(input.repo, input.runId), async () => {
    const onto = await resolveCommit(input.repo, input.onto);
    const change = await revParse(input.repo, `${ref}^{commit}`);
    if (!change) throw new RunStateConflictError(input.runId, `there is no branch ${branch} to rebase`);
    const original = await readCommit(input.repo, change);
    if (original.parents.length !== 1) throw new RunStateConflictError(input.runId, `${change} on ${branch} is not a single-parent change`);
    const [parent] = original.parents;
    if (parent === onto) return { status: 'up-to-date', commit: change, onto };
    // merge-tree (git < 2.40) picks the merge base itself: it is the change's parent exactly when `onto` descends
    // from it. Otherwise the branch was rewritten under the change, and a merge would bring back what was dropped.
    if (!(await isAncestor(input.repo, parent, onto))) {
      const reason = `the new head ${onto} does not contain the change's base ${parent} (the branch was rewritten)`;
      return { status: 'conflict', onto, paths: [], reason };
    }
    const merged = await git(['merge-tree', '--write-tree', '-z', '--name-only', onto, change], { cwd: input.repo, okExitCodes: [1] });
    const fields = merged.stdout.split('\0');
    const tree = fields[0].trim();
    if (merged.exitCode === 1) {
      const end = fields.indexOf('', 1);
      const paths = [...new Set(fields.slice(1, end === -1 ? undefined : end))].sort();
      const reason = `the change and the new head ${onto} both changed ${paths.join(', ') || 'the same lines'}`;
      return { status: 'conflict', onto, paths, reason };
    }
    const ontoTree = (await git(['rev-parse', `${onto}^{tree}`], { cwd: input.repo })).stdout.trim();
    if (tree === ontoTree) return { status: 'empty', onto, reason: `the new head ${onto} already has everything the change brings` };

    const commit = (
      await git(['commit-tree', '--no-gpg-sign', tree, '-p', onto], {
        cwd: input.repo,
        input: original.message,
        env: identityEnv(original.author, original.committer),
      })
    ).stdout.trim();
    const reflog = `forge promote ${input.runId}: rebase onto ${onto}`;
    const swap = await git(['update-ref', '-m', reflog, ref, commit, change], { cwd: input.repo, okExitCodes: [1, 128] });
    if (swap.exitCode !== 0) {
      const now = await revParse(input.repo, ref);
      if (now !== commit) throw new RunStateConflictError(input.runId, `the branch ${branch} moved to ${now ?? 'nothing'} during the rebase`);
    }
    return { status: 'rebased', commit, previous: change, onto };
  });
}
