import { CancellationScope, isCancellation, upsertSearchAttributes, workflowInfo } from '@temporalio/workflow';
import {
  PROMOTE_STEPS,
  skippedStage,
  type PromoteBuiltinResult,
  type PromoteBuiltinWorkflowInput,
  type PromotionRejection,
  type StageReport,
  type VerificationEnvelope,
} from '../contract/promotion-runs';
import { ForgeOutcomeKey } from '../contract/search-attributes';
import type { PlannedPromotion, Workspace } from '../activities/promotion-activities';
import { promotionSteps, stageStep } from './activity-options';
import { promotionRejectionOf } from './failures';
import { Progress } from './progress';
import { refused } from './refusal';

/**
 * Promotes a change to the agent's built-in code: plan (the base's forge.verify.json maps every changed path to the
 * stages, or the run fails closed) → a detached worktree of the base on the host that took the plan → the change
 * committed on `forge/promote/<run>` → compile, targeted tests, startup smoke, each a bounded process tree → the
 * branch moved from the base to exactly the tested commit (compare-and-swap). When the branch moved meanwhile, the
 * change is rebased onto the new head and verified again, for at most `maxRounds` rounds, so the branch only ever
 * points at tested trees. Whatever happens (success, a failed stage, a cancellation, a worker killed and restarted),
 * the run's worktree and branch are removed before it ends.
 */
export async function promoteBuiltinWorkflow(input: PromoteBuiltinWorkflowInput): Promise<PromoteBuiltinResult> {
  const info = workflowInfo();
  // The run's worktree directory and branch are named after the run: a retried step finds its own work.
  const runKey = info.firstExecutionRunId;
  const startedAt = info.startTime.getTime();
  let branch = input.branch ?? '';
  const progress = new Progress('promote', input.repo, PROMOTE_STEPS);
  const paths = input.changes.map((c) => c.path);
  const stages: StageReport[] = [];
  let baseCommit = '';
  let workspace: Workspace | undefined;
  let plannedStages: StageReport['name'][] = [];
  let rounds = 0;

  const inStep = async <T>(name: (typeof PROMOTE_STEPS)[number], summary: string | undefined, work: () => Promise<T>): Promise<T> => {
    progress.start(name, summary);
    return work();
  };
  const finish = (
    status: PromoteBuiltinResult['status'],
    message: string,
    extra: { mergedCommit?: string; failure?: PromotionRejection } = {},
  ): PromoteBuiltinResult => {
    const failure = extra.failure;
    const overall: VerificationEnvelope['overall'] = !failure
      ? 'pass'
      : failure.category === 'timeout'
        ? 'timeout'
        : failure.category === 'infra'
          ? 'error'
          : 'fail';
    progress.end(status, { at: failure?.stage, verdict: failure?.category, message });
    upsertSearchAttributes([{ key: ForgeOutcomeKey, value: status }]);
    return {
      status,
      workflowId: info.workflowId,
      repo: input.repo,
      branch,
      baseCommit,
      mergedCommit: extra.mergedCommit,
      rounds,
      message,
      steps: progress.records(),
      diagnostics: {
        runId: info.runId,
        overall,
        workspace: { path: workspace?.path ?? '', isolated: true },
        timing: { startedAt: info.startTime.toISOString(), durationMs: Date.now() - startedAt },
        stages,
        failure: failure && { category: failure.category, reason: failure.reason, stage: failure.stage },
      },
    };
  };

  type Verdict = [PromoteBuiltinResult['status'], string, { mergedCommit?: string; failure?: PromotionRejection }?];
  const shared = promotionSteps(input.promoteQueue);
  let host: ReturnType<typeof promotionSteps> | undefined;

  const verifyAndMerge = async (): Promise<Verdict> => {
    const plan: PlannedPromotion = await inStep('workspace', 'reading forge.verify.json', () =>
      shared.planPromotion.executeWithOptions({ summary: `plan the verification of ${paths.length} path(s)` }, [
        { repo: input.repo, branch: input.branch, paths },
      ]),
    );
    plannedStages = plan.stages.map((s) => s.name);
    branch = plan.branch;
    baseCommit = plan.baseCommit;
    const onHost = (host = promotionSteps(plan.hostQueue));
    let ws = await onHost.prepareWorkspace.executeWithOptions({ summary: `worktree of ${baseCommit.slice(0, 12)}` }, [
      { repo: input.repo, runId: runKey, commit: baseCommit, paths },
    ]);
    workspace = ws;
    progress.done('workspace', ws.path);
    const applied = await inStep('apply', undefined, () =>
      onHost.applyChange.executeWithOptions({ summary: `commit ${paths.length} file(s) on forge/promote/${runKey}` }, [
        { repo: input.repo, runId: runKey, worktree: ws.path, base: baseCommit, changes: input.changes, message: input.message, dateMs: startedAt },
      ]),
    );
    let tested = applied.commit;
    progress.done('apply', tested.slice(0, 12));

    for (;;) {
      rounds++;
      stages.length = 0;
      for (const stage of plan.stages) {
        const maxRunMs = stage.commands.reduce((sum, c) => sum + (c.timeoutMs ?? plan.stageTimeoutMs), 0);
        const report = await inStep(stage.name, undefined, () =>
          stageStep(plan.hostQueue, maxRunMs).verifyStage.executeWithOptions({ summary: `${stage.name} (round ${rounds})` }, [{ worktree: ws.path, stage }]),
        );
        stages.push(report);
        progress.done(stage.name, report.status === 'skipped' ? 'no changed path concerns it' : `${report.status} in ${report.durationMs} ms`);
      }
      if (input.dryRun)
        return ['verified', `verified ${tested.slice(0, 12)} on ${baseCommit.slice(0, 12)}; a dry run merges nothing`, { mergedCommit: tested }];
      const merged = await inStep('merge', `${branch}: ${baseCommit.slice(0, 12)} → ${tested.slice(0, 12)}`, () =>
        onHost.mergeChange.executeWithOptions({ summary: `compare-and-swap ${branch}` }, [{ repo: input.repo, branch, base: baseCommit, tested }]),
      );
      if (merged.status === 'merged' || merged.status === 'already-merged') {
        progress.done('merge', `${branch} at ${tested.slice(0, 12)}`);
        return ['promoted', `${branch} is at the tested commit ${tested.slice(0, 12)}; ${merged.liveCheckout}`, { mergedCommit: tested }];
      }
      if (merged.status === 'refused') return rejected({ category: 'refused', stage: 'merge', reason: merged.reason });
      if (rounds >= plan.maxRounds) {
        return rejected({ category: 'refused', stage: 'merge', reason: `${branch} moved during each of ${rounds} verification rounds; nothing was merged` });
      }
      progress.done('merge', `${branch} moved to ${merged.head.slice(0, 12)}: rebasing and verifying again`);
      ws = workspace = await onHost.rebaseWorkspace.executeWithOptions({ summary: `rebase onto ${merged.head.slice(0, 12)}` }, [
        { repo: input.repo, runId: runKey, onto: merged.head, paths },
      ]);
      baseCommit = merged.head;
      tested = ws.commit;
    }
  };

  const rejected = (rejection: PromotionRejection): Verdict => {
    if (rejection.report) stages.push(rejection.report);
    for (const name of plannedStages.slice(stages.length)) stages.push(skippedStage(name));
    progress.failed((PROMOTE_STEPS as readonly string[]).includes(rejection.stage) ? rejection.stage : 'workspace', rejection.reason);
    return ['rejected', rejection.reason, { failure: rejection }];
  };

  let verdict: Verdict;
  try {
    verdict = await verifyAndMerge();
  } catch (err) {
    const rejection = promotionRejectionOf(err);
    if (!rejection) {
      if (!isCancellation(err)) upsertSearchAttributes([{ key: ForgeOutcomeKey, value: 'failed' }]);
      throw err;
    }
    verdict = rejected(rejection);
  } finally {
    // Cleanup always, cancelled or not: the worktree and the run's branch go. Before planPromotion answered, nothing
    // was made on any host.
    const onHost = host;
    if (onHost) {
      await CancellationScope.nonCancellable(async () => {
        await inStep('cleanup', undefined, () =>
          onHost.cleanupPromotion.executeWithOptions({ summary: 'remove the worktree and the run branch' }, [{ repo: input.repo, runId: runKey }]),
        );
        progress.done('cleanup');
      });
    }
  }
  const result = finish(...verdict);
  return result.status === 'rejected' ? refused(result, result.message) : result;
}
