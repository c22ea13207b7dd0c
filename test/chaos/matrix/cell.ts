import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import path from 'node:path';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { ForgeClient } from '../../../src/client';
import { startForgeWorker, stopWorker, workerExit } from '../forge-worker';
import { differenceOf, leftoversIn, processesUnder, readEndState, stillRunning, type EndState } from './end-state';
import type { RunResult, RunSpace, Scenario } from './scenarios';

/** What one run of a scenario left, with or without a fault. */
export interface RunRecord {
  outcome: Record<string, unknown>;
  state: EndState;
  /** Sandbox processes still alive after the workers stopped. */
  strays: string[];
  /** Sandbox run directories, and what the scenario says must be gone (worktrees, branches), left after the workers stopped. */
  leftovers: string[];
  /** The scenario's own state (e.g. a repository's branch and files), compared like `state`. */
  scenarioState: Record<string, unknown>;
  /** From spawning the fresh worker to the run's result (only with a fault). */
  recoveryMs?: number;
  /** From the fresh worker saying it polls to the run's result (only with a fault). */
  readyToEndMs?: number;
  /** From the run's start to its result, with or without a fault. */
  runMs: number;
}

/** One cell of the matrix: a scenario, a fault point, and whether the end state matched the uninterrupted run. */
export interface CellReport {
  workflowType: string;
  scenario: string;
  point: string;
  consistent: boolean;
  reason?: string;
  recoveryMs?: number;
  readyToEndMs?: number;
  /** What the kill cost the run: its start-to-result time over the uninterrupted run's (work redone and waits). */
  costMs?: number;
}

const STEP_TIMEOUT_MS = 90_000;

export function within<T>(ms: number, what: string, promise: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not happen within ${ms / 1000} s`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/** A fresh platform for one run: its own FORGE_HOME with PGlite, its own task queues, the shared dev server. */
export interface CellPlatform {
  home: string;
  /** FORGE_SANDBOX_TMPDIR: where the sandbox's run directories go (empty once the workers stopped). */
  sandboxTmp: string;
  env: NodeJS.ProcessEnv;
  forge: ForgeClient;
}

export function createCellPlatform(temporal: TestWorkflowEnvironment, scenario?: Pick<Scenario, 'env'>): CellPlatform {
  const home = mkdtempSync(path.join(existsSync('/dev/shm') ? '/dev/shm' : '/tmp', 'forge-chaos-cell-'));
  const sandboxTmp = path.join(home, 'sandbox-tmp');
  // The sandbox runs each tool as its own user, which must be able to pass through to its run directory.
  chmodSync(home, 0o711);
  mkdirSync(sandboxTmp, { mode: 0o711 });
  chmodSync(sandboxTmp, 0o711);
  const suffix = randomBytes(4).toString('hex');
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH,
    FORGE_HOME: home,
    FORGE_AGENT_TOOLS_DIR: path.join(home, 'agent-tools'),
    FORGE_SANDBOX_TMPDIR: sandboxTmp,
    FORGE_TASK_QUEUE_CONTROL: `chaos-control-${suffix}`,
    FORGE_TASK_QUEUE_SANDBOX: `chaos-sandbox-${suffix}`,
    // Promotions too get queues of their own (the host queue is `<this>@<host>`): no other cell's worker takes a step.
    FORGE_TASK_QUEUE_PROMOTE: `chaos-promote-${suffix}`,
    // The namespace-wide forge-reverify schedule fires at the top of each hour: a cell's worker must not make it start
    // runs on the cell's queue (load-with-faults once found a scheduled run's worktree in its repository at 16:00).
    FORGE_REVERIFY_INTERVAL: 'off',
    TEMPORAL_ADDRESS: temporal.connection.options.address,
    TEMPORAL_NAMESPACE: temporal.namespace ?? 'default',
    ...scenario?.env?.(home),
  };
  const forge = ForgeClient.fromClient(temporal.client, {
    taskQueue: env.FORGE_TASK_QUEUE_CONTROL,
    promotion: { taskQueue: env.FORGE_TASK_QUEUE_PROMOTE },
  });
  return { home, sandboxTmp, env, forge };
}

/** How long the processes a killed worker held may take to die with it (the kernel's pdeathsig is immediate). */
const DIE_WITH_WORKER_MS = 2_000;

/**
 * Runs `scenario` on a fresh platform: an unarmed `forge worker` makes the setup; with a `point`, a worker armed to
 * SIGKILL itself there takes over, the run starts, the worker dies at the point, and a fresh unarmed worker is
 * started at once and must finish the run. For a point of the scenario's `externalKills`, the unarmed worker runs it
 * and the harness SIGKILLs that worker's process (not its process group) at the point's moment; the processes the
 * moment named must die with it.
 */
export async function runScenario(temporal: TestWorkflowEnvironment, scenario: Scenario, point?: string): Promise<RunRecord> {
  await within(STEP_TIMEOUT_MS, 'the scenario’s preparation', scenario.prepare?.() ?? Promise.resolve());
  const { home, sandboxTmp, env, forge } = createCellPlatform(temporal, scenario);
  const space: RunSpace = { home, env };
  let worker: ChildProcess | undefined;
  try {
    worker = await startForgeWorker(env);
    await within(STEP_TIMEOUT_MS, 'the setup', scenario.setup(forge, space));
    let result: Promise<RunResult>;
    let restartedAt: number | undefined;
    let runStartedAt = 0;
    let readyAt: number | undefined;
    let survivors: Promise<string[]> = Promise.resolve([]);
    const external = point === undefined ? undefined : scenario.externalKills?.[point];
    if (point === undefined) {
      runStartedAt = performance.now();
      result = scenario.run(forge, space);
    } else if (external) {
      const target = worker;
      runStartedAt = performance.now();
      result = scenario.run(forge, space);
      const first = await within(
        STEP_TIMEOUT_MS,
        `the moment ${point}`,
        Promise.race([external(space).then((tree) => ({ tree })), result.then(() => ({ tree: undefined }))]),
      );
      if (!first.tree) throw new Error(`the moment ${point} never came: the worker finished the run first`);
      const doomed = first.tree;
      const exited = workerExit(target);
      process.kill(target.pid!, 'SIGKILL');
      await exited;
      restartedAt = performance.now();
      survivors = (async () => {
        for (const deadline = Date.now() + DIE_WITH_WORKER_MS; Date.now() < deadline && doomed.some(stillRunning);) await new Promise((r) => setTimeout(r, 20));
        return doomed.filter(stillRunning).map((p) => `${p.pid} (${p.cmdline.slice(0, 120)}) outlived the killed worker by ${DIE_WITH_WORKER_MS} ms`);
      })();
      worker = await startForgeWorker(env);
      readyAt = performance.now();
    } else {
      await stopWorker(worker);
      // A point that names a workflow type is one of a child run's (the payment's ledger migration).
      const spec = point.includes(':') ? point : `${scenario.workflowType}:${point}`;
      worker = await startForgeWorker({ ...env, FORGE_FAULT_KILL_AT: spec });
      const armed = worker;
      runStartedAt = performance.now();
      result = scenario.run(forge, space);
      const first = await within(
        STEP_TIMEOUT_MS,
        `the fault point ${point}`,
        Promise.race([workerExit(armed).then((how) => ({ how })), result.then(() => ({ how: 'finished' as const }))]),
      );
      if (first.how !== 'SIGKILL') {
        throw new Error(
          `the fault point ${point} was never reached: the armed worker ${first.how === 'finished' ? 'finished the run' : `ended with ${first.how}`}`,
        );
      }
      restartedAt = performance.now();
      worker = await startForgeWorker(env);
      readyAt = performance.now();
    }
    const ended = await within(STEP_TIMEOUT_MS, 'the run’s end', result);
    const endedAt = performance.now();
    const description = await temporal.client.workflow.getHandle(ended.workflowId).describe();
    await stopWorker(worker);
    worker = undefined;
    const run = { workflowId: ended.workflowId, runId: description.runId };
    return {
      outcome: scenario.outcome(ended, run, space),
      state: await readEndState(home, run),
      scenarioState: (await scenario.state?.(space)) ?? {},
      strays: [...(await survivors), ...processesUnder(home)],
      leftovers: [...leftoversIn(sandboxTmp), ...((await scenario.leftovers?.(space)) ?? [])],
      recoveryMs: restartedAt === undefined ? undefined : Math.round(endedAt - restartedAt),
      readyToEndMs: readyAt === undefined ? undefined : Math.round(endedAt - readyAt),
      runMs: Math.round(endedAt - runStartedAt),
    };
  } finally {
    if (worker) await stopWorker(worker);
    rmSync(home, { recursive: true, force: true });
  }
}

/** The cell's verdict: the faulted run against the uninterrupted one. */
export function judgeCell(scenario: Scenario, point: string, baseline: RunRecord, faulted: RunRecord): CellReport {
  const base = {
    workflowType: scenario.workflowType,
    scenario: scenario.label,
    point,
    recoveryMs: faulted.recoveryMs,
    readyToEndMs: faulted.readyToEndMs,
    costMs: faulted.runMs - baseline.runMs,
  };
  const a = JSON.stringify(baseline.outcome);
  const b = JSON.stringify(faulted.outcome);
  const reason =
    (a !== b ? `the result differs: uninterrupted ${a} / after the fault ${b}` : undefined) ??
    differenceOf(baseline.state, faulted.state) ??
    differenceOf(baseline.scenarioState, faulted.scenarioState) ??
    (faulted.strays.length > 0 ? `processes outlived the workers: ${faulted.strays.join('; ')}` : undefined) ??
    (faulted.leftovers.length > 0 ? `left behind: ${faulted.leftovers.join(', ')}` : undefined);
  return { ...base, consistent: reason === undefined, reason };
}

/** A cell that could not even be judged (the point never fired, a run that never ended, ...). */
export function brokenCell(scenario: Scenario, point: string, err: unknown): CellReport {
  return { workflowType: scenario.workflowType, scenario: scenario.label, point, consistent: false, reason: (err as Error).message ?? String(err) };
}
