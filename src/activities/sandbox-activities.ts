import { isDeepStrictEqual } from 'node:util';
import { Context } from '@temporalio/activity';
import { runSandbox, type SandboxLimits, type SandboxPool, type SandboxVerdict } from '../sandbox';
import type { SandboxSlots } from '../sandbox/slots';
import { ForgeMetric } from '../contract/observability';
import type { TestHereResult, VerdictSummary } from '../contract/tool-runs';
import { currentRun, type WorkflowRun } from './current-run';
import { toolRejected } from './failures';

export interface SandboxActivityDeps {
  limits: Partial<SandboxLimits>;
  /** Processes started ahead of demand (the worker's); without one, every test starts its own. */
  pool?: SandboxPool;
  /** The runs this worker may have at once, shared by the local test and the sandbox queue's activities. */
  slots: SandboxSlots;
  /**
   * How long a test begun early (startTestEarly) waits for its run's next step to take it; then it is killed if it
   * still runs, and forgotten. Default {@link EARLY_TEST_CLAIM_MS}.
   */
  earlyClaimMs?: number;
}

/**
 * A test begun by a deployment's first step lives this long unclaimed. The step that claims it normally follows within
 * milliseconds, in the same workflow task; a run that never gets there (cancelled, or its task lost and replayed
 * elsewhere) leaves nobody to claim it.
 */
const EARLY_TEST_CLAIM_MS = 60_000;

/** A test begun by a run's first step, waiting for its next step (testToolHere) to take its verdict. */
interface EarlyTest {
  input: TestInput;
  verdict: Promise<SandboxVerdict>;
  controller: AbortController;
  expiry: NodeJS.Timeout;
}

type TestInput = { name: string; source: string; testInput: unknown };

/** The tool tests of a deployment: where its workflow task runs when a slot is free there, else on the sandbox queue. */
export function createSandboxActivities(deps: SandboxActivityDeps) {
  /** Tests begun early, by run: at most one each (a first step that runs again replaces its own). */
  const early = new Map<string, EarlyTest>();
  const claimMs = deps.earlyClaimMs ?? EARLY_TEST_CLAIM_MS;
  const runKey = (run: WorkflowRun) => `${run.workflowId}\n${run.runId}`;

  /** Takes a begun test out of the map, if it is still the one there, and stops its expiry; true when it was. */
  const forget = (key: string, begun: EarlyTest | undefined): begun is EarlyTest => {
    if (!begun || early.get(key) !== begun) return false;
    early.delete(key);
    clearTimeout(begun.expiry);
    return true;
  };

  /** One run in the bounded sandbox on a slot already taken, released when it ends. */
  const run = async (input: TestInput, release: () => void, signal: AbortSignal): Promise<SandboxVerdict> => {
    try {
      return await runSandbox({ name: input.name, source: input.source, input: input.testInput, limits: deps.limits, signal }, { pool: deps.pool });
    } finally {
      release();
    }
  };

  /**
   * What a verdict means to the activity that reports it: `passed` returns the verdict (without the output, which may
   * be large); any other verdict is a non-retryable `ToolRejected` failure carrying it. Only a failure of the sandbox
   * machinery itself (it could not start a process) is thrown as retryable. A cancelled activity throws its reason.
   */
  const judge = (verdict: SandboxVerdict): VerdictSummary => {
    const ctx = Context.current();
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

  /** Runs the tool's test on a slot already taken, and judges it. Idempotent: a run leaves nothing behind. */
  const test = async (input: TestInput, release: () => void): Promise<VerdictSummary> => judge(await run(input, release, Context.current().cancellationSignal));

  /** The test this run's first step began, if it began one for exactly this content; it is this caller's from now on. */
  const claimEarly = (input: TestInput): EarlyTest | undefined => {
    const current = currentRun();
    if (!current) return undefined;
    const key = runKey(current);
    const begun = early.get(key);
    if (!forget(key, begun)) return undefined;
    if (begun.input.source === input.source && isDeepStrictEqual(begun.input.testInput, input.testInput)) return begun;
    begun.controller.abort(new Error('the run asked for another test than the one begun for it'));
    return undefined;
  };

  return {
    /**
     * Begins a deployment's test here, now, beside the steps still to come in its first step (the type check), when
     * one of this worker's slots is free; its next step (testToolHere, in the same workflow task) takes the verdict
     * instead of running the test again. The type checker works in a thread of the worker and a sandbox run in a process
     * of its own, so on two cores both go on at once. A rejection before the next step cancels it (`cancel`), which kills the
     * run: a tool the type check refuses is cut off as soon as it is refused. Nothing is begun outside an activity of a
     * workflow run, or with no slot free (the next step then decides where the test runs, as without this).
     */
    startTestEarly(input: TestInput): { cancel(reason: string): void } | undefined {
      const current = currentRun();
      if (!current) return undefined;
      const release = deps.slots.tryTake();
      if (!release) return undefined;
      const key = runKey(current);
      const replaced = early.get(key);
      if (forget(key, replaced)) replaced.controller.abort(new Error('the step that began this test began another'));
      const controller = new AbortController();
      const begun: EarlyTest = {
        input,
        controller,
        verdict: run(input, release, controller.signal),
        expiry: setTimeout(() => {
          if (forget(key, begun)) controller.abort(new Error(`nothing claimed this test within ${claimMs} ms`));
        }, claimMs).unref(),
      };
      begun.verdict.catch(() => undefined); // judged by its claimant; unclaimed, nobody needs it
      early.set(key, begun);
      return {
        cancel: (reason) => {
          if (forget(key, begun)) controller.abort(new Error(reason));
        },
      };
    },

    /**
     * Whether the test this run's first step began (startTestEarly) has passed, waiting for it at most `ms`. True lets
     * the first step end the deployment itself (testAndCommitHere, which takes the verdict); false leaves the test
     * running, unclaimed, for the next step. Nothing begun: false at once.
     */
    async earlyTestPassedWithin(ms: number): Promise<boolean> {
      const current = currentRun();
      const begun = current && early.get(runKey(current));
      if (!begun) return false;
      let timer: NodeJS.Timeout | undefined;
      const waited = new Promise<undefined>((resolve) => {
        timer = setTimeout(() => resolve(undefined), ms);
      });
      try {
        const verdict = await Promise.race([begun.verdict.catch(() => undefined), waited]);
        return verdict?.status === 'passed';
      } finally {
        clearTimeout(timer);
      }
    },

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
     * runs): takes the verdict of the test this run's first step began (startTestEarly), else tests right here when
     * one of this worker's slots is free (sparing the sandbox queue's two server round trips), and says `busy` at once
     * when none is, so the workflow sends the test to the sandbox queue, where any worker with a free slot takes it.
     * Not an activity of its own; a fault point of its own (the chaos matrix's).
     */
    async testToolHere(input: TestInput): Promise<TestHereResult> {
      const begun = claimEarly(input);
      if (begun) {
        // Ours now: this step's cancellation kills it, as it kills a test begun here.
        const { cancellationSignal } = Context.current();
        const abort = () => begun.controller.abort(cancellationSignal.reason);
        if (cancellationSignal.aborted) abort();
        cancellationSignal.addEventListener('abort', abort, { once: true });
        try {
          return { verdict: judge(await begun.verdict) };
        } finally {
          cancellationSignal.removeEventListener('abort', abort);
        }
      }
      const release = deps.slots.tryTake();
      if (!release) return { busy: true };
      return { verdict: await test(input, release) };
    },
  };
}

export type SandboxActivities = ReturnType<typeof createSandboxActivities>;
