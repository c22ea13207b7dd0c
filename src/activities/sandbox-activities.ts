import { Context } from '@temporalio/activity';
import { runSandbox, type SandboxLimits, type SandboxPool, type SandboxVerdict } from '../sandbox';
import type { SandboxSlots } from '../sandbox/slots';
import { ForgeMetric } from '../contract/observability';
import type { TestHereResult, VerdictSummary } from '../contract/tool-runs';
import { toolRejected } from './failures';

export interface SandboxActivityDeps {
  limits: Partial<SandboxLimits>;
  /** Processes started ahead of demand (the worker's); without one, every test starts its own. */
  pool?: SandboxPool;
  /** The runs this worker may have at once, shared by the local test and the sandbox queue's activities. */
  slots: SandboxSlots;
}

type TestInput = { name: string; source: string; testInput: unknown };

/** The tool tests of a deployment: where its workflow task runs when a slot is free there, else on the sandbox queue. */
export function createSandboxActivities(deps: SandboxActivityDeps) {
  /**
   * Runs the tool's test in the bounded sandbox on a slot already taken. `passed` returns the verdict (without the
   * output, which may be large); any other verdict is a non-retryable `ToolRejected` failure carrying it. Only a
   * failure of the sandbox machinery itself (it could not start a process) is thrown as retryable. Idempotent: a
   * run leaves nothing behind. Temporal's cancellation kills the process tree.
   */
  const test = async (input: TestInput, release: () => void): Promise<VerdictSummary> => {
    const ctx = Context.current();
    let verdict: SandboxVerdict;
    try {
      verdict = await runSandbox(
        {
          name: input.name,
          source: input.source,
          input: input.testInput,
          limits: deps.limits,
          signal: ctx.cancellationSignal,
        },
        { pool: deps.pool },
      );
    } finally {
      release();
    }
    if (ctx.cancellationSignal.aborted) throw ctx.cancellationSignal.reason ?? new Error('cancelled');
    const { output: _output, ...summary } = verdict;
    ctx.metricMeter.createCounter(ForgeMetric.sandboxVerdicts, 'runs', 'Sandbox test runs by verdict').add(1, { status: verdict.status });
    if (verdict.status === 'passed') return summary;
    if (verdict.status === 'crashed' && verdict.diagnostics?.phase === 'process' && verdict.error?.startsWith('the sandbox could not')) {
      throw new Error(verdict.error); // infrastructure (ENOSPC, EMFILE, ...): worth a retry
    }
    throw toolRejected({
      stage: 'test',
      verdict: verdict.status,
      message: `the test run ended ${verdict.status}: ${verdict.error ?? ''}`.trim(),
      sandbox: summary,
    });
  };

  return {
    /**
     * The sandbox-queue activity: waits for a slot of this worker, then tests. Heartbeats while it waits and runs,
     * so a worker killed meanwhile is noticed within the heartbeat timeout.
     */
    async testTool(input: TestInput): Promise<VerdictSummary> {
      const ctx = Context.current();
      const beat = setInterval(() => ctx.heartbeat(), 1000);
      try {
        return await test(input, await deps.slots.take(ctx.cancellationSignal));
      } finally {
        clearInterval(beat);
      }
    },

    /**
     * The test of testAndCommitHere (src/activities/deploy-here.ts, the local activity a deployment's workflow task
     * runs): tests right here when one of this worker's slots is free (sparing the sandbox queue's two server round
     * trips), and says `busy` at once when none is, so the workflow sends the test to the sandbox queue, where any
     * worker with a free slot takes it. Not an activity of its own; a fault point of its own (the chaos matrix's).
     */
    async testToolHere(input: TestInput): Promise<TestHereResult> {
      const release = deps.slots.tryTake();
      if (!release) return { busy: true };
      return { verdict: await test(input, release) };
    },
  };
}

export type SandboxActivities = ReturnType<typeof createSandboxActivities>;
