import { Context } from '@temporalio/activity';
import { runSandbox, type SandboxLimits, type SandboxPool, type SandboxVerdict } from '../sandbox';
import { ForgeMetric } from '../contract/observability';
import type { VerdictSummary } from '../contract/tool-runs';
import { toolRejected } from './failures';

export interface SandboxActivityDeps {
  limits: Partial<SandboxLimits>;
  /** Processes started ahead of demand (the worker's); without one, every test starts its own. */
  pool?: SandboxPool;
}

/** The sandbox-queue activity: runs on workers whose concurrency is capped near the core count. */
export function createSandboxActivities(deps: SandboxActivityDeps) {
  return {
    /**
     * Runs the tool's test in the bounded sandbox. `passed` returns the verdict (without the output, which may be
     * large); any other verdict is a non-retryable `ToolRejected` failure carrying it. Only a failure of the sandbox
     * machinery itself (it could not start a process) is thrown as retryable. Idempotent: a run leaves nothing
     * behind. Heartbeats while it runs, and Temporal's cancellation kills the process tree.
     */
    async testTool(input: { name: string; source: string; testInput: unknown }): Promise<VerdictSummary> {
      const ctx = Context.current();
      const beat = setInterval(() => ctx.heartbeat(), 1000);
      let verdict: SandboxVerdict;
      try {
        verdict = await runSandbox({
          name: input.name,
          source: input.source,
          input: input.testInput,
          limits: deps.limits,
          signal: ctx.cancellationSignal,
        }, { pool: deps.pool });
      } finally {
        clearInterval(beat);
      }
      if (ctx.cancellationSignal.aborted) throw ctx.cancellationSignal.reason ?? new Error('cancelled');
      const { output: _output, ...summary } = verdict;
      ctx.metricMeter.createCounter(ForgeMetric.sandboxVerdicts, 'runs', 'Sandbox test runs by verdict').add(1, { status: verdict.status });
      if (verdict.status === 'passed') return summary;
      if (verdict.status === 'crashed' && verdict.diagnostics?.phase === 'process' && verdict.error?.startsWith('the sandbox could not')) {
        throw new Error(verdict.error); // infrastructure (ENOSPC, EMFILE, ...): worth a retry
      }
      throw toolRejected({ stage: 'test', verdict: verdict.status, message: `the test run ended ${verdict.status}: ${verdict.error ?? ''}`.trim(), sandbox: summary });
    },
  };
}

export type SandboxActivities = ReturnType<typeof createSandboxActivities>;
