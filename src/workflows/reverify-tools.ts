import { continueAsNew, metricMeter, proxyLocalActivities, upsertSearchAttributes, workflowInfo } from '@temporalio/workflow';
import type { ReverifyActivities, ReverifyBatchTool, ReverifyTestResult } from '../activities/reverify-activities';
import { FAST_STEP, reverifySandboxSteps } from './activity-options';
import { Progress } from './progress';
import { reverifyBuiltin } from './reverify-builtin';
import { ForgeOutcomeKey } from '../contract/search-attributes';
import { ForgeMetric } from '../contract/observability';
import { DEFAULT_REVERIFY_BATCH_SIZE, type ReverifySummary, type ReverifyToolsInput } from '../contract/reverify-runs';

const steps = proxyLocalActivities<ReverifyActivities>(FAST_STEP);

/**
 * Re-verifies every active tool: runs each active version's stored test again in the sandbox, a batch of tools at a
 * time with a bounded number of tests in flight, and continues as new after each batch, so 10,000 tools never grow
 * one history without bound. Each test is recorded under (run, tool, version, attempt) by the activity that ran it, so
 * a run whose worker was killed resumes without testing again what it recorded.
 *
 * A failing active version is tested once more at once: a pass makes it `flaky` (reported, nothing moved). A second
 * failure quarantines it: its earlier versions are tested newest first, and the first that passes becomes active
 * (`degraded`), or none does (`quarantined`); the store makes the move, its event and its notification in one
 * transaction. A quarantined tool is not tested again by later runs (nothing of it is active): only a deployment
 * brings it back. The result is the run's summary, read from what it recorded.
 */
export async function reverifyToolsWorkflow(input: ReverifyToolsInput = {}): Promise<ReverifySummary> {
  const info = workflowInfo();
  const runKey = input.runKey ?? info.firstExecutionRunId;
  const batches = (input.batches ?? 0) + 1;
  const batchSize = input.batchSize ?? DEFAULT_REVERIFY_BATCH_SIZE;
  const progress = new Progress('reverify', 'tools', ['load', 'test', 'builtin', 'summarize']);

  progress.start('load', `batch ${batches}`);
  const batch = await steps.loadReverifyBatch.executeWithOptions({ summary: `load batch ${batches} (after ${input.after ?? 'the start'})` }, [
    { runKey, after: input.after, limit: batchSize },
  ]);
  progress.done('load', `batch ${batches}: ${batch.tools.length} tool(s) from ${batch.tools[0]?.name ?? '-'}`);

  // Here or on the sandbox queue, as the batch recorded it.
  const sandbox = reverifySandboxSteps(batch.sandbox);
  const test = (tool: { name: string; version: number }, attempt: number, role: 'active' | 'retest' | 'candidate') =>
    sandbox.reverifyTest
      .executeWithOptions({ summary: `${role === 'retest' ? 'retest' : 'test'} ${tool.name} v${tool.version}` }, [
        { runKey, workflowId: info.workflowId, name: tool.name, version: tool.version, attempt, role },
      ])
      // Retries spent on infrastructure (a sandbox that cannot start): reported, never acted on.
      .catch((err: Error): ReverifyTestResult => ({ verdict: 'error', durationMs: 0, error: err.message, recorded: false }));

  let done = 0;
  let acted = 0;
  const check = async (tool: ReverifyBatchTool) => {
    const first = tool.recorded ?? (await test(tool, 1, 'active'));
    if (first.verdict === 'passed' || first.action !== undefined) return;
    const base = { runKey, workflowId: info.workflowId, name: tool.name, version: tool.version };
    if (first.verdict === 'error') {
      await steps.settleReverify.executeWithOptions({ summary: `${tool.name}: test could not run` }, [
        { ...base, action: 'error', verdict: 'error', error: first.error },
      ]);
      return;
    }
    const again = await test(tool, 2, 'retest');
    if (again.verdict === 'passed' || again.verdict === 'error') {
      const action = again.verdict === 'passed' ? 'flaky' : 'error';
      await steps.settleReverify.executeWithOptions({ summary: `${tool.name} is ${action}` }, [
        { ...base, action, verdict: first.verdict, error: first.error, retestVerdict: again.verdict },
      ]);
      return;
    }
    const tried: { version: number; verdict: string; error?: string }[] = [];
    let fallback: number | undefined;
    for (const version of tool.earlier) {
      const r = await test({ name: tool.name, version }, 1, 'candidate');
      tried.push({ version, verdict: r.verdict, ...(r.error ? { error: r.error } : {}) });
      if (r.verdict === 'passed') {
        fallback = version;
        break;
      }
    }
    const moved = await steps.quarantineTool.executeWithOptions(
      { summary: fallback === undefined ? `quarantine ${tool.name}` : `degrade ${tool.name} to v${fallback}` },
      [
        {
          runKey,
          workflowId: info.workflowId,
          name: tool.name,
          failedVersion: tool.version,
          fallbackVersion: fallback,
          reason: {
            why: `v${tool.version} failed its stored test twice in re-verification (${first.verdict}, then ${again.verdict})`,
            verdict: first.verdict,
            error: first.error,
            retestVerdict: again.verdict,
            retestError: again.error,
            earlierTried: tried,
          },
        },
      ],
    );
    if (moved.state !== 'superseded') {
      acted++;
      // Workflow metrics are not recorded on replay: a run resumed after a crash counts each move once.
      metricMeter.createCounter(ForgeMetric.quarantines, 'tools', 'Tools re-verification quarantined or degraded').add(1, { state: moved.state });
    }
  };

  progress.start('test', `${batch.tools.length} tool(s), ${batch.sandbox.parallelism} at a time, ${batch.sandbox.testsHere ? 'here' : 'on the sandbox queue'}`);
  const queue = [...batch.tools];
  const lane = async () => {
    for (let tool = queue.shift(); tool; tool = queue.shift()) {
      await check(tool);
      done++;
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(batch.sandbox.parallelism, batch.tools.length)) }, lane));
  progress.done('test', `batch ${batches}: ${done} tool(s) checked, ${acted} moved`);

  if (batch.tools.length === batchSize) {
    await continueAsNew<typeof reverifyToolsWorkflow>({ ...input, runKey, after: batch.tools.at(-1)!.name, batches });
  }
  // The built-in branch once per run, after the last batch, when the platform has a built-in repository: the batch's
  // result says so (`builtin`), so the choice is the recorded activity result's and a replay follows it.
  let builtin: ReverifySummary['builtin'];
  if (batch.builtin && input.builtin !== false) {
    progress.start('builtin', batch.builtin.repo);
    builtin = await reverifyBuiltin(batch.builtin, `reverify-${runKey}`);
    progress.done('builtin', `${builtin.status}${builtin.failure ? ` at ${builtin.failure.stage}` : ''}`);
  }
  progress.start('summarize');
  const recorded = await steps.summarizeReverify.executeWithOptions({ summary: 'summarize the run' }, [{ runKey, workflowId: info.workflowId, batches }]);
  const summary: ReverifySummary = builtin ? { ...recorded, builtin } : recorded;
  progress.done(
    'summarize',
    `${summary.counts.tested} tested, ${summary.quarantined.length} quarantined, ${summary.degraded.length} degraded, ${summary.flaky.length} flaky`,
  );
  const builtinFailed = builtin !== undefined && (builtin.status === 'failed' || builtin.status === 'error');
  const outcome = summary.quarantined.length + summary.degraded.length > 0 ? 'quarantined' : summary.counts.failed > 0 || builtinFailed ? 'failures' : 'passed';
  progress.end(outcome);
  upsertSearchAttributes([{ key: ForgeOutcomeKey, value: outcome }]);
  return summary;
}
