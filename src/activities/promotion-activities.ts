import { Context } from '@temporalio/activity';
import type { FailureCategory, ProposedChange, StageReport } from '../contract/promotion-runs';
import type { NetworkPolicy } from '../contract/network-policy';
import {
  BranchNotFoundError,
  EmptyChangeError,
  InvalidInputError,
  UnmappedPathError,
  UnsafePathError,
  VerifyPlanError,
  cleanupRun,
  commitChange,
  createWorktree,
  isRepository,
  linkNodeModules,
  mergeIntoBranch,
  planStages,
  planStagesForTree,
  readVerifyPlan,
  trackedFiles,
  rebaseChange,
  checkedOutBranch,
  resolveBranchCommit,
  type CommitIdentity,
  type PlannedStage,
} from '../git';
import { runStage } from '../sandbox/run-stage';
import { promotionRejected } from './failures';

/** What the promotion activities need; the worker passes its configuration. */
export interface PromotionActivityDeps {
  /** This worker's own promotion queue (`<promote>@<host>`): the later steps of a run it starts go there. */
  hostQueue: string;
  /** Where worktrees go (default: the git core's, /dev/shm/forge-worktrees where writable). */
  worktreeRoot?: string;
  identity: CommitIdentity;
  /** Bounds of a stage command the plan gives none for. */
  stageDefaults: { timeoutMs: number; memoryMb: number; outputBytes: number };
  /**
   * Where a stage's private directories (its HOME, each command's TMPDIR) go: the sandbox's configured root
   * (FORGE_SANDBOX_TMPDIR), so that what a killed worker's stage left there is swept by the next run in that root, and
   * a test or an operator finds it where the other run directories are. Unset: the sandbox's default.
   */
  stageTmpDir?: string;
  /** What a stage's commands may reach over the network: the sandbox's policy (FORGE_SANDBOX_NETWORK). */
  stageNetwork?: NetworkPolicy;
  /** How many times a change is verified when the branch keeps moving under it. */
  maxRounds: number;
}

/** How often a promotion step heartbeats while it works (the workflow's heartbeat timeout is a few of these). */
const HEARTBEAT_EVERY_MS = 1_000;

/**
 * Runs a step heartbeating every second from its start. A step of a worker that was SIGKILLed is then retried as soon
 * as the heartbeat timeout (seconds) notices, not at its start-to-close timeout (minutes: long enough for a slow git
 * on a big repository). Outside an activity (a direct call) it only runs `work`.
 */
async function heartbeating<T>(work: () => Promise<T>): Promise<T> {
  let ctx: Context;
  try {
    ctx = Context.current();
  } catch {
    return work();
  }
  ctx.heartbeat();
  const beat = setInterval(() => ctx.heartbeat(), HEARTBEAT_EVERY_MS);
  try {
    return await work();
  } finally {
    clearInterval(beat);
  }
}

/** Turns the git core's input and plan errors into rejections; anything else stays an error Temporal retries. */
async function refusing<T>(stage: string, work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (err) {
    const refusal =
      err instanceof UnmappedPathError ||
      err instanceof UnsafePathError ||
      err instanceof EmptyChangeError ||
      err instanceof VerifyPlanError ||
      err instanceof BranchNotFoundError ||
      err instanceof InvalidInputError;
    if (refusal) throw promotionRejected({ category: 'refused', stage, reason: (err as Error).message });
    throw err;
  }
}

export interface PlannedPromotion {
  /** The branch promoted into: the one asked for, or the one the live checkout has checked out. */
  branch: string;
  /** The queue of the worker on this host: every later step of the run goes there, where its worktree is. */
  hostQueue: string;
  baseCommit: string;
  stages: PlannedStage[];
  /** The worker's configuration, recorded in the history so that the run replays alike. */
  stageTimeoutMs: number;
  maxRounds: number;
}

/** What re-verification of the built-in branch runs: the stages of the head's whole tree, or why nothing runs. */
export type PlannedBranchCheck =
  | ({ status: 'planned'; commit: string } & Omit<PlannedPromotion, 'baseCommit' | 'maxRounds'>)
  | { status: 'skipped'; reason: string }
  | { status: 'refused'; branch: string; commit: string; reason: string };

export interface Workspace {
  path: string;
  /** The commit checked out (detached). */
  commit: string;
}

export type MergeOutcome =
  | { status: 'merged'; commit: string; liveCheckout: string }
  | { status: 'already-merged'; commit: string; liveCheckout: string }
  | { status: 'branch-moved'; head: string }
  | { status: 'refused'; reason: string };

/** The category a stage's failure falls in, by the stage that failed and how. */
function categoryOf(report: StageReport): FailureCategory {
  if (report.status === 'timeout') return 'timeout';
  if (report.status === 'error') return 'infra';
  return report.name === 'compile' ? 'compile' : report.name === 'targetedTests' ? 'test' : 'startup';
}

/**
 * The activities of PromoteBuiltinWorkflow: thin adapters over the git core (src/git) and the sandbox's stage runner.
 * Every one is idempotent (the git core treats "already there" as success), so Temporal may retry any of them; a
 * verdict is a non-retryable PromotionRejected failure carrying its details. Every one heartbeats every second, so a
 * worker killed in any of them is noticed within the heartbeat timeout the workflow gives (activity-options.ts).
 */
export function createPromotionActivities(deps: PromotionActivityDeps) {
  const root = deps.worktreeRoot;
  /**
   * A detached worktree of `commit` with the live checkout's node_modules linked in, refused when the change touches
   * the dependency files (Forge does not install): the workspace of a promotion, and again after its rebase.
   */
  const workspaceAt = async (input: { repo: string; runId: string; paths: string[] }, commit: string): Promise<Workspace> => {
    const worktree = await createWorktree({ repo: input.repo, runId: input.runId, commit, root });
    const linked = await linkNodeModules({ repo: input.repo, worktree: worktree.path, changedPaths: input.paths });
    if (linked.status === 'install-needed') {
      throw promotionRejected({
        category: 'refused',
        stage: 'workspace',
        reason: `${linked.reason}; Forge verifies changes with the installed packages only`,
      });
    }
    return { path: worktree.path, commit: worktree.commit };
  };
  return {
    /**
     * Runs on the shared promotion queue: reads the base commit and the plan as committed there (never the change's
     * own plan), and fails closed on a changed path the plan does not map. Reads only.
     */
    async planPromotion(input: { repo: string; branch?: string; paths: string[] }): Promise<PlannedPromotion> {
      return heartbeating(() =>
        refusing('plan', async () => {
          // Not a checkout is the caller's mistake, not an outage to retry.
          if (!(await isRepository(input.repo))) {
            throw promotionRejected({
              category: 'refused',
              stage: 'plan',
              reason: `${input.repo} is not a git repository (FORGE_BUILTIN_REPO or --repo names the agent's checkout)`,
            });
          }
          const branch = input.branch ?? (await checkedOutBranch(input.repo));
          const baseCommit = await resolveBranchCommit(input.repo, branch);
          const plan = await readVerifyPlan(input.repo, baseCommit);
          const stages = planStages(plan, input.paths);
          return { branch, hostQueue: deps.hostQueue, baseCommit, stages, stageTimeoutMs: deps.stageDefaults.timeoutMs, maxRounds: deps.maxRounds };
        }),
      );
    },

    /**
     * Re-verification of the built-in branch (issue 12), on the shared promotion queue: the branch the live checkout
     * has checked out, its head, and the stages of its whole tree ({@link planStagesForTree} says what they are). No
     * repository, or no branch checked out, is `skipped` (reported, nothing to verify); a plan on the head that does
     * not validate is `refused` (the branch's own fault, reported like a failed stage). Reads only.
     */
    async planBranchCheck(input: { repo: string }): Promise<PlannedBranchCheck> {
      return heartbeating(async () => {
        if (!(await isRepository(input.repo))) return { status: 'skipped', reason: `${input.repo} is not a git repository (FORGE_BUILTIN_REPO)` };
        let branch: string;
        try {
          branch = await checkedOutBranch(input.repo);
        } catch (err) {
          if (err instanceof InvalidInputError) return { status: 'skipped', reason: err.message };
          throw err;
        }
        const commit = await resolveBranchCommit(input.repo, branch);
        try {
          const plan = await readVerifyPlan(input.repo, commit);
          const stages = planStagesForTree(plan, await trackedFiles(input.repo, commit));
          return { status: 'planned', branch, commit, hostQueue: deps.hostQueue, stages, stageTimeoutMs: deps.stageDefaults.timeoutMs };
        } catch (err) {
          if (err instanceof VerifyPlanError || err instanceof EmptyChangeError) return { status: 'refused', branch, commit, reason: err.message };
          throw err;
        }
      });
    },

    /**
     * A detached worktree of `commit` under the worktree root, with the live checkout's node_modules linked in when
     * the change leaves the dependency files alone (otherwise refused: Forge does not install). Compensated by
     * `cleanupPromotion`, registered before it.
     */
    async prepareWorkspace(input: { repo: string; runId: string; commit: string; paths: string[] }): Promise<Workspace> {
      return heartbeating(() =>
        refusing('workspace', async () => {
          return workspaceAt(input, input.commit);
        }),
      );
    },

    /** Writes the proposed files into the worktree and commits them on `forge/promote/<runId>`; the same input gives the same commit. */
    async applyChange(input: {
      repo: string;
      runId: string;
      worktree: string;
      base: string;
      changes: ProposedChange[];
      message: string;
      /** Fixed for the run (its start time), so a retried commit is the same commit. */
      dateMs: number;
    }): Promise<{ commit: string; paths: string[] }> {
      return heartbeating(() =>
        refusing('apply', async () => {
          const committed = await commitChange({
            repo: input.repo,
            runId: input.runId,
            worktree: input.worktree,
            base: input.base,
            files: input.changes,
            message: input.message,
            identity: deps.identity,
            date: input.dateMs,
          });
          return { commit: committed.commit, paths: committed.paths };
        }),
      );
    },

    /**
     * One stage, bounded and contained, heartbeating every second; a cancelled run kills the stage's tree. A stage
     * that does not pass is a rejection carrying its report. Running it again runs it again (it only reads the
     * worktree, as far as the plan's commands do).
     */
    async verifyStage(input: { worktree: string; stage: PlannedStage }): Promise<StageReport> {
      const ctx = Context.current();
      const report = await runStage(input.stage, {
        worktree: input.worktree,
        defaults: deps.stageDefaults,
        tmpDir: deps.stageTmpDir,
        network: deps.stageNetwork,
        onHeartbeat: () => ctx.heartbeat(),
        signal: ctx.cancellationSignal,
      });
      // Cancelled: the tree is dead; the run learns of it as a cancellation, not as a verdict.
      if (ctx.cancellationSignal.aborted) await ctx.cancelled;
      if (report.status === 'pass' || report.status === 'skipped') return report;
      const reason = report.reason ?? `${report.name} ${report.status === 'timeout' ? 'timed out' : `failed (exit ${report.exitCode})`}`;
      throw promotionRejected({ category: categoryOf(report), stage: report.name, reason, report });
    },

    /**
     * Moves the branch from `base` to exactly `tested` (compare-and-swap), after checking that the live checkout, if
     * it has the branch checked out, has no local changes in the touched paths; then brings its files forward. A
     * branch that moved meanwhile is an answer (`branch-moved`), not a failure: the workflow rebases and verifies again.
     */
    async mergeChange(input: { repo: string; branch: string; base: string; tested: string }): Promise<MergeOutcome> {
      return heartbeating(() =>
        refusing('merge', async () => {
          const merged = await mergeIntoBranch({ ...input, reason: `forge promote: ${input.tested}` });
          if (merged.status === 'refused') return { status: 'refused', reason: merged.live.reason };
          if (merged.status === 'branch-moved') {
            if (merged.head === null)
              throw promotionRejected({ category: 'refused', stage: 'merge', reason: `the branch ${input.branch} was deleted during verification` });
            return { status: 'branch-moved', head: merged.head };
          }
          const { live } = merged;
          const liveCheckout =
            live.status === 'refused'
              ? `the branch is at the tested commit, but the live checkout at ${live.checkout} kept its local changes: ${live.reason}`
              : live.status === 'not-checked-out'
                ? 'no live checkout has the branch checked out'
                : `the live checkout at ${live.checkout} is at the tested commit`;
          return { status: merged.status, commit: input.tested, liveCheckout };
        }),
      );
    },

    /**
     * Rebases the run's change onto the branch's new head and gives the next round a fresh worktree of the result
     * (the last round's stages may have left anything in the old one). A conflict is a rejection.
     */
    async rebaseWorkspace(input: { repo: string; runId: string; onto: string; paths: string[] }): Promise<Workspace> {
      return heartbeating(() =>
        refusing('merge', async () => {
          const rebased = await rebaseChange(input);
          if (rebased.status === 'conflict' || rebased.status === 'empty') {
            throw promotionRejected({
              category: 'refused',
              stage: 'merge',
              reason: `the branch moved and the change no longer applies to it: ${rebased.reason}`,
            });
          }
          return workspaceAt(input, rebased.commit);
        }),
      );
    },

    /** Removes the run's worktree and branch; a no-op when they are gone or were never made. */
    async cleanupPromotion(input: { repo: string; runId: string }): Promise<{ worktreeRemoved: boolean; branchDeleted: boolean }> {
      return heartbeating(() => cleanupRun({ repo: input.repo, runId: input.runId, root }));
    },
  };
}

export type PromotionActivities = ReturnType<typeof createPromotionActivities>;
