import { Context } from '@temporalio/activity';
import type { ReverifyResultRow, ReverifyStore, ToolStore } from '../db';
import { REVERIFY_SUMMARY_MAX_TOOLS, type ReverifiedTool, type ReverifyAction, type ReverifySummary, type ReverifyVerdict } from '../contract/reverify-runs';
import { runSandbox, type SandboxLimits, type SandboxPool } from '../sandbox';
import type { SandboxSlots } from '../sandbox/slots';

/** One test of a re-verification run: the key its result is recorded under, and whose test it is. */
export interface ReverifyTestInput {
  runKey: string;
  workflowId: string;
  name: string;
  version: number;
  /** 1 for a version's first test in the run, 2 for the immediate retest of a failing active version. */
  attempt: number;
  role: 'active' | 'retest' | 'candidate';
}

export interface ReverifyTestResult {
  verdict: ReverifyVerdict;
  durationMs: number;
  error?: string;
  /** The action already decided for this tool in this run (a resumed run skips what it did). */
  action?: ReverifyAction;
  /** True when the result came from the table, not from a test run now. */
  recorded: boolean;
}

/** One active tool of a batch, with what this run has already recorded of it. */
export interface ReverifyBatchTool {
  name: string;
  version: number;
  earlier: number[];
  recorded?: ReverifyTestResult;
}

export interface ReverifyBatch {
  tools: ReverifyBatchTool[];
  /**
   * The sandbox queue, its time limit, how many tests the run keeps in flight, and whether they run here, where the
   * run's workflow task runs (FORGE_SANDBOX_TEST_HERE), as local activities: recorded in the history, so a replay
   * follows it.
   */
  sandbox: ReverifyPlacement;
  /** The built-in repository and the shared promotion queue, when the worker has them (recorded in the history). */
  builtin?: { repo: string; promoteQueue: string };
}

/** Where and how a re-verification run tests (ReverifyBatch.sandbox). */
interface ReverifyPlacement {
  taskQueue: string;
  maxTimeoutMs: number;
  parallelism: number;
  testsHere?: boolean;
}

/** What the sandbox-queue activity of re-verification needs. */
export interface ReverifySandboxDeps {
  tools: ToolStore;
  results: ReverifyStore;
  limits: Partial<SandboxLimits>;
  pool?: SandboxPool;
  /** The runs this worker may have at once, shared with the deployments' tests (src/sandbox/slots.ts). */
  slots: SandboxSlots;
}

const asResult = (row: ReverifyResultRow): ReverifyTestResult => ({
  verdict: row.verdict as ReverifyVerdict,
  durationMs: row.durationMs,
  error: row.error ?? undefined,
  action: (row.action as ReverifyAction | null) ?? undefined,
  recorded: true,
});

/**
 * The test activity of re-verification: a version's stored test, run again, its result recorded. On the sandbox queue,
 * or as a local activity of the control worker when the run tests here (ReverifyPlacement.testsHere).
 */
export function createReverifySandboxActivities(deps: ReverifySandboxDeps) {
  return {
    /**
     * Runs the stored test of one tool version (its compiled module and test input from the database) in the bounded
     * sandbox and records the verdict under (run, tool, version, attempt). Every verdict is a result, not a failure:
     * what to do about it is the workflow's decision. Idempotent: a key already recorded is returned without testing
     * again, which is what lets a run killed mid-batch resume without re-testing. Heartbeats (on the queue);
     * cancellation kills the tree.
     */
    async reverifyTest(input: ReverifyTestInput): Promise<ReverifyTestResult> {
      const earlier = await deps.results.find(input);
      if (earlier) return asResult(earlier);
      const row = await deps.tools.getVersion(input.name, input.version);
      const record = (verdict: ReverifyVerdict, durationMs: number, error?: string) =>
        deps.results.record({
          ...input,
          verdict,
          durationMs,
          error,
          // A passing active version needs nothing more: its action is decided here.
          action: input.role === 'active' && verdict === 'passed' ? 'none' : undefined,
        });
      if (!row) return asResult(await record('error', 0, `v${input.version} of ${input.name} is no longer stored`));
      const ctx = Context.current();
      // A local activity (a run that tests here) cannot heartbeat: the workflow task's own heartbeats cover it.
      const beat = ctx.info.isLocal ? undefined : setInterval(() => ctx.heartbeat(), 1000);
      try {
        const release = await deps.slots.take(ctx.cancellationSignal);
        const verdict = await runSandbox(
          // The stored module, the very code the registries run (agent-tools/ holds it), not the source compiled again:
          // what is re-verified is what is served, and esbuild is not run once per tool.
          {
            name: input.name,
            source: row.sourceTs,
            compiledJs: row.compiledJs,
            input: row.testInput ?? {},
            limits: deps.limits,
            signal: ctx.cancellationSignal,
          },
          { pool: deps.pool },
        ).finally(release);
        if (ctx.cancellationSignal.aborted) throw ctx.cancellationSignal.reason ?? new Error('cancelled');
        if (verdict.status === 'crashed' && verdict.diagnostics?.phase === 'process' && verdict.error?.startsWith('the sandbox could not')) {
          throw new Error(verdict.error); // infrastructure: retried, never recorded as the tool's verdict
        }
        return { ...asResult(await record(verdict.status, verdict.durationMs, verdict.error)), recorded: false };
      } finally {
        clearInterval(beat);
      }
    },
  };
}

export type ReverifySandboxActivities = ReturnType<typeof createReverifySandboxActivities>;

/** What the control-queue (local) activities of re-verification need. */
export interface ReverifyActivityDeps {
  tools: ToolStore;
  results: ReverifyStore;
  /** Makes agent-tools/ match the active pointers (the database's NOTIFY went out with the move). */
  publish(names?: readonly string[]): Promise<unknown>;
  sandbox: ReverifyPlacement;
  /** Where the built-in branch is re-verified (config.promotion.repo, the shared promotion queue). */
  builtin?: { repo: string; promoteQueue: string };
}

/** The control-queue activities of ReverifyToolsWorkflow: reading the batch, acting on verdicts, the summary. */
export function createReverifyActivities(deps: ReverifyActivityDeps) {
  return {
    /** The next active tools by name after `after`, with what this run recorded of them. Read-only. */
    async loadReverifyBatch(input: { runKey: string; after?: string; limit: number }): Promise<ReverifyBatch> {
      const candidates = await deps.results.activeBatch(input.after, input.limit);
      const tools: ReverifyBatchTool[] = [];
      for (const c of candidates) {
        const row = await deps.results.find({ runKey: input.runKey, name: c.name, version: c.version, attempt: 1 });
        tools.push({ ...c, recorded: row ? asResult(row) : undefined });
      }
      return { tools, sandbox: deps.sandbox, ...(deps.builtin ? { builtin: deps.builtin } : {}) };
    },

    /**
     * Records what the run decided about a tool that it did not move (`flaky`, `error`), on the active version's
     * row (inserting it when no test was recorded). A flaky tool also gets a `tool.reverify_flaky` event. Idempotent.
     */
    async settleReverify(input: {
      runKey: string;
      workflowId: string;
      name: string;
      version: number;
      action: ReverifyAction;
      verdict: ReverifyVerdict;
      error?: string;
      retestVerdict?: ReverifyVerdict;
    }): Promise<void> {
      const before = await deps.results.find({ ...input, attempt: 1 });
      await deps.results.settle({
        runKey: input.runKey,
        workflowId: input.workflowId,
        name: input.name,
        version: input.version,
        attempt: 1,
        role: 'active',
        verdict: input.verdict,
        durationMs: 0,
        error: input.error,
        action: input.action,
      });
      if (input.action === 'flaky' && !before?.action) {
        await deps.tools.appendEvent({
          kind: 'tool.reverify_flaky',
          subject: input.name,
          detail: { version: input.version, verdict: input.verdict, error: input.error, retestVerdict: input.retestVerdict, runKey: input.runKey },
          workflowId: input.workflowId,
        });
      }
    },

    /**
     * Quarantines a tool whose active version failed twice: the store moves it (fallback active, or none) with its
     * event and notification in one transaction, only while the failed version is still active; then agent-tools/
     * is published and the run's row records the action. Idempotent by run (the store finds its own event).
     */
    async quarantineTool(input: {
      runKey: string;
      workflowId: string;
      name: string;
      failedVersion: number;
      fallbackVersion?: number;
      reason: Record<string, unknown>;
    }): Promise<{ state: 'quarantined' | 'degraded' | 'superseded'; activeVersion?: number }> {
      const moved = await deps.tools.quarantine(
        { name: input.name, failedVersion: input.failedVersion, fallbackVersion: input.fallbackVersion, reason: input.reason, runKey: input.runKey },
        { workflowId: input.workflowId },
      );
      if (moved.state !== 'superseded') await deps.publish([input.name]);
      await deps.results.settle({
        runKey: input.runKey,
        workflowId: input.workflowId,
        name: input.name,
        version: input.failedVersion,
        attempt: 1,
        role: 'active',
        verdict: String(input.reason.verdict ?? 'failed'),
        durationMs: 0,
        action: moved.state,
      });
      return moved;
    },

    /** The run's summary, from what it recorded (so it does not grow the history across continue-as-new). Read-only. */
    async summarizeReverify(input: { runKey: string; workflowId: string; batches: number }): Promise<ReverifySummary> {
      const rows = await deps.results.rowsOfRun(input.runKey, 'active');
      const moved = new Map<string, number | undefined>();
      for (const row of rows) {
        if (row.action === 'degraded') moved.set(row.name, (await deps.tools.getActive(row.name))?.version);
      }
      const all: ReverifiedTool[] = rows.map((r) => ({
        name: r.name,
        version: r.version,
        verdict: r.verdict as ReverifyVerdict,
        action: (r.action ?? 'error') as ReverifyAction,
        ...(moved.has(r.name) && moved.get(r.name) !== undefined ? { activeVersion: moved.get(r.name) } : {}),
        durationMs: r.durationMs,
        ...(r.error ? { error: r.error } : {}),
      }));
      const truncated = all.length > REVERIFY_SUMMARY_MAX_TOOLS;
      const names = (action: ReverifyAction) => all.filter((t) => t.action === action).map((t) => t.name);
      return {
        runKey: input.runKey,
        workflowId: input.workflowId,
        tools: truncated ? all.filter((t) => t.action !== 'none') : all,
        quarantined: names('quarantined'),
        degraded: names('degraded'),
        flaky: names('flaky'),
        counts: {
          tested: all.length,
          passed: all.filter((t) => t.verdict === 'passed').length,
          failed: all.filter((t) => t.verdict !== 'passed').length,
          batches: input.batches,
        },
        truncated,
      };
    },
  };
}

export type ReverifyActivities = ReturnType<typeof createReverifyActivities>;
