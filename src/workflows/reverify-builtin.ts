import { CancellationScope, isCancellation, log } from '@temporalio/workflow';
import type { BuiltinReverifyReport } from '../contract/reverify-runs';
import { skippedStage, type StageReport } from '../contract/promotion-runs';
import type { PlannedBranchCheck } from '../activities/promotion-activities';
import { promotionSteps, stageStep } from './activity-options';
import { promotionRejectionOf } from './failures';

/** Where the built-in repository is and the shared promotion queue that plans on it (the worker's configuration). */
export interface BuiltinTarget {
  repo: string;
  promoteQueue: string;
}

/**
 * Re-verifies the built-in repository's branch with the promotion's own steps (one mechanism): plan on the shared
 * promotion queue, then on the host that planned, a detached worktree of the head (prepareWorkspace, no change
 * applied), each stage (verifyStage) until one does not pass, and always the cleanup (cleanupPromotion), so nothing of
 * it is left. Nothing is merged: a failure is reported with its envelope and not acted on. Called from
 * ReverifyToolsWorkflow; every step is idempotent by `runId`, so a worker killed in it resumes the same worktree.
 */
export async function reverifyBuiltin(target: BuiltinTarget, runId: string): Promise<BuiltinReverifyReport> {
  const { repo } = target;
  let plan: PlannedBranchCheck;
  try {
    plan = await promotionSteps(target.promoteQueue).planBranchCheck.executeWithOptions({ summary: 'plan the built-in branch check' }, [{ repo }]);
  } catch (err) {
    if (isCancellation(err)) throw err;
    return { status: 'error', repo, reason: messageOf(err), stages: [] };
  }
  if (plan.status === 'skipped') return { status: 'skipped', repo, reason: plan.reason, stages: [] };
  const { branch, commit } = plan;
  if (plan.status === 'refused') {
    return {
      status: 'failed',
      repo,
      branch,
      commit,
      reason: plan.reason,
      stages: [],
      failure: { category: 'refused', stage: 'plan', reason: plan.reason, command: [], exitCode: null, stdoutTail: '', stderrTail: '' },
    };
  }
  const onHost = promotionSteps(plan.hostQueue);
  const stages: StageReport[] = [];
  const skipRest = () => {
    for (const s of plan.stages.slice(stages.length)) stages.push(skippedStage(s.name));
  };
  try {
    const ws = await onHost.prepareWorkspace.executeWithOptions({ summary: `worktree of ${branch} at ${commit.slice(0, 12)}` }, [
      { repo, runId, commit, paths: [] },
    ]);
    for (const stage of plan.stages) {
      const maxRunMs = stage.commands.reduce((sum, c) => sum + (c.timeoutMs ?? plan.stageTimeoutMs), 0);
      stages.push(
        await stageStep(plan.hostQueue, maxRunMs).verifyStage.executeWithOptions({ summary: `${stage.name} of ${branch}` }, [{ worktree: ws.path, stage }]),
      );
    }
    return { status: 'passed', repo, branch, commit, stages };
  } catch (err) {
    if (isCancellation(err)) throw err;
    const rejection = promotionRejectionOf(err);
    if (!rejection) {
      skipRest();
      return { status: 'error', repo, branch, commit, reason: messageOf(err), stages };
    }
    const report = rejection.report;
    if (report) stages.push(report);
    skipRest();
    return {
      status: 'failed',
      repo,
      branch,
      commit,
      reason: rejection.reason,
      stages,
      failure: {
        category: rejection.category,
        stage: rejection.stage,
        reason: rejection.reason,
        command: report?.command ?? [],
        exitCode: report?.exitCode ?? null,
        stdoutTail: report?.stdoutTail ?? '',
        stderrTail: report?.stderrTail ?? '',
      },
    };
  } finally {
    // Always, cancelled or not: the worktree goes (no branch was made). A cleanup that keeps failing is logged; the
    // next check's cleanup of its own run does not reach this one's worktree, so it says so loudly.
    await CancellationScope.nonCancellable(() =>
      onHost.cleanupPromotion.executeWithOptions({ summary: 'remove the worktree' }, [{ repo, runId }]).catch((err: unknown) => {
        log.error('the built-in branch check could not remove its worktree', { runId, error: messageOf(err) });
      }),
    );
  }
}

function messageOf(err: unknown): string {
  const cause = (err as { cause?: Error }).cause;
  return cause?.message ?? (err as Error).message ?? String(err);
}
