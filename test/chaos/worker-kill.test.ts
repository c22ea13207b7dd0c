import type { ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { ACTIVE_INDEX_LOCK_FILE, readActiveIndex } from '../../src/registry/tool-files';
import { lockLeftByKilledHolder } from '../registry/helpers';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { ForgeClient } from '../../src/client';
import { attemptsDirOf } from '../../src/platform/attempt-ledger';
import { startTemporal } from '../helpers/platform';
import { localActivityOf } from '../helpers/run-shape';
import { processesMarkedWith } from '../helpers/processes';
import { until, watchSandboxRuns } from './end-state';
import { killWorkerHard, startForgeWorker } from './forge-worker';

/**
 * A worker killed with SIGKILL in the middle of a deployment, then restarted, must end in the same state as an
 * uninterrupted run: the deployment finishes, and database, disk and the client's view agree. The worker is the real
 * `forge worker` (dist/, built by `npm test` before jest) in its own process, on embedded PGlite.
 */

const slowTool = (marker: string, name = 'slow_tool') => `import { z } from 'zod';
export default {
  name: '${name}',
  description: 'Takes its time (${marker}).',
  inputSchema: z.object({ ms: z.number() }),
  timeoutMs: 20_000,
  async execute({ ms }: { ms: number }) {
    await new Promise((r) => setTimeout(r, ms));
    return { waited: ms };
  },
};`;

/** The activity attempts the workers of `home` have on file (src/platform/attempt-ledger.ts). */
function attemptsOnFile(home: string): number {
  const dir = attemptsDirOf(home);
  if (!existsSync(dir)) return 0;
  return readdirSync(dir).reduce((n, worker) => n + readdirSync(path.join(dir, worker)).length, 0);
}

let env: TestWorkflowEnvironment;
let home: string;
let childEnv: NodeJS.ProcessEnv;
let worker: ChildProcess | undefined;
let forge: ForgeClient;

beforeAll(async () => {
  env = await startTemporal();
  home = mkdtempSync(path.join(existsSync('/dev/shm') ? '/dev/shm' : '/tmp', 'forge-chaos-'));
  const suffix = randomBytes(4).toString('hex');
  childEnv = {
    PATH: process.env.PATH,
    FORGE_HOME: home,
    FORGE_AGENT_TOOLS_DIR: path.join(home, 'agent-tools'),
    FORGE_TASK_QUEUE_CONTROL: `chaos-control-${suffix}`,
    FORGE_TASK_QUEUE_SANDBOX: `chaos-sandbox-${suffix}`,
    TEMPORAL_ADDRESS: env.connection.options.address,
    TEMPORAL_NAMESPACE: env.namespace ?? 'default',
    // The first two tests kill a test run on the sandbox queue, whose attempts the ledger hands back; the last one
    // turns FORGE_SANDBOX_TEST_HERE on again and kills a test run in the workflow task.
    FORGE_SANDBOX_TEST_HERE: 'off',
  };
  forge = ForgeClient.fromClient(env.client, { taskQueue: childEnv.FORGE_TASK_QUEUE_CONTROL });
}, 120_000);

afterAll(async () => {
  if (worker) await killWorkerHard(worker);
  await env?.teardown();
  if (home) rmSync(home, { recursive: true, force: true });
});

/**
 * Deploys `name`, kills the worker once its sandbox test's attempt is on file, restarts it and waits for the result.
 * Returns the result and what ended the killed attempt, as the retried attempt's last failure says.
 */
async function killDuringQueuedTest(name: string) {
  const handle = await forge.startDeployTool({ name, source: slowTool('a', name), testInput: { ms: 2500 } });
  // Wait until the sandbox test runs (the workflow says so once it schedules it; the worker has the attempt on file once
  // it has started it, before the tool's 2.5 s begin), then kill the worker and everything in its process group.
  for (let i = 0; i < 200; i++) {
    if ((await handle.progress())?.stage === 'test' && attemptsOnFile(home) > 0) break;
    await new Promise((r) => setTimeout(r, 50));
  }
  expect((await handle.progress())?.stage).toBe('test');
  expect(attemptsOnFile(home)).toBe(1);
  await killWorkerHard(worker!);

  worker = await startForgeWorker(childEnv);
  const result = await handle.result();
  const history = await env.client.workflow.getHandle(handle.workflowId, handle.runId).fetchHistory();
  const retried = history.events!.map((e) => e.activityTaskStartedEventAttributes).filter((a) => a && a.attempt! > 1);
  expect(retried).toHaveLength(1);
  const failure = retried[0]!.lastFailure;
  return { result, endedBy: failure?.applicationFailureInfo?.type ?? failure?.timeoutFailureInfo?.timeoutType ?? failure?.message };
}

test('SIGKILL of the worker during the sandbox test, then a restart: the deployment finishes, state agrees', async () => {
  worker = await startForgeWorker(childEnv);
  // The restarted worker hands the killed attempt back at once (src/platform/attempt-ledger.ts), so the attempt that
  // passes is the second and what ended the first is the dead worker, not its heartbeat timeout (3 s) run out. That is
  // a race with the restart: on a loaded machine the restart may take longer than the timeout, so another tool is
  // tried, up to three in all. A hand-back that never works loses every time.
  const endings: unknown[] = [];
  for (const name of ['slow_tool', 'slow_tool_2', 'slow_tool_3']) {
    const { result, endedBy } = await killDuringQueuedTest(name);
    expect(result).toMatchObject({ status: 'active', name, version: 1, verdict: 'passed' });
    const index = (await readActiveIndex(path.join(home, 'agent-tools')))!;
    expect(index.tools[name].version).toBe(1);
    for (const ext of ['ts', 'mjs', 'json']) expect(existsSync(path.join(home, 'agent-tools', name, `v1.${ext}`))).toBe(true);
    const tools = await forge.listTools();
    expect(tools.tools.find((t) => t.name === name)).toMatchObject({ activeVersion: 1, versions: 1 });
    endings.push(endedBy);
    if (endedBy === 'ForgeWorkerDied') break;
  }
  expect(endings).toContain('ForgeWorkerDied');
}, 300_000);

test('SIGKILL right after the commit: the restarted worker publishes, and a redeploy of the same content is a no-op', async () => {
  const handle = await forge.startDeployTool({ name: 'slow_tool', source: slowTool('b'), testInput: { ms: 10 } });
  for (let i = 0; i < 400; i++) {
    const progress = await handle.progress();
    if (progress && ['commit', 'notify', 'finished'].includes(progress.stage)) break;
    await new Promise((r) => setTimeout(r, 5));
  }
  await killWorkerHard(worker!);
  worker = await startForgeWorker(childEnv);
  const result = await handle.result();
  expect(result).toMatchObject({ status: 'active', version: 2 });
  const index = (await readActiveIndex(path.join(home, 'agent-tools')))!;
  expect(index.tools.slow_tool.version).toBe(2);
  const again = await forge.deployTool({ name: 'slow_tool', source: slowTool('b'), testInput: { ms: 10 } });
  expect(again).toMatchObject({ status: 'active', version: 2, unchanged: true });
  expect((await forge.listTools()).tools.find((t) => t.name === 'slow_tool')).toMatchObject({ activeVersion: 2, versions: 2 });
}, 180_000);

test('SIGKILL during a test run in the workflow task (FORGE_SANDBOX_TEST_HERE=on), then a restart: the deployment finishes, state agrees', async () => {
  const runs = watchSandboxRuns();
  const hereEnv = { ...childEnv, ...runs.platformEnv, FORGE_SANDBOX_TEST_HERE: 'on', FORGE_CHAOS_MARKER: runs.marker };
  try {
    await killWorkerHard(worker!);
    worker = await startForgeWorker(hereEnv);
    const handle = await forge.startDeployTool({ name: 'slow_tool', source: slowTool('c'), testInput: { ms: 2500 } });
    // A run has its private directory under FORGE_SANDBOX_TMPDIR while it runs (no spares: each one is a run's).
    await until(() => readdirSync(runs.tmpRoot).length > 0, 30_000, 'the sandbox test to run');
    await killWorkerHard(worker);
    // The run's processes die with the worker that started them (the marker is in the worker's environment too).
    await until(() => processesMarkedWith(runs.marker).length === 0, 10_000, "the killed worker's processes to end");

    worker = await startForgeWorker(hereEnv);
    const result = await handle.result();
    expect(result).toMatchObject({ status: 'active', version: 3, verdict: 'passed' });
    // Nothing went to the sandbox queue: the killed workflow task timed out (2 s), and the restarted worker ran the
    // test again in its own.
    const history = await env.client.workflow.getHandle(handle.workflowId, handle.runId).fetchHistory();
    expect(history.events!.filter((e) => e.activityTaskScheduledEventAttributes)).toEqual([]);
    expect(history.events!.some((e) => e.workflowTaskTimedOutEventAttributes)).toBe(true);
    const index = (await readActiveIndex(path.join(home, 'agent-tools')))!;
    expect(index.tools.slow_tool.version).toBe(3);
    expect((await forge.listTools()).tools.find((t) => t.name === 'slow_tool')).toMatchObject({ activeVersion: 3, versions: 3 });
    await until(() => readdirSync(runs.tmpRoot).length === 0, 10_000, 'the run directories to be removed');
  } finally {
    runs.dispose();
  }
}, 180_000);

test('What a killed worker left is gone once its successor starts, though that one runs nothing: its run directories and its lock on active.json', async () => {
  const runs = watchSandboxRuns();
  // No spares (platformEnv) and no runs after the restart: nothing of the sandbox starts that could sweep on its own.
  const hereEnv = { ...childEnv, ...runs.platformEnv, FORGE_SANDBOX_TEST_HERE: 'on', FORGE_CHAOS_MARKER: runs.marker };
  const lock = path.join(home, 'agent-tools', ACTIVE_INDEX_LOCK_FILE);
  try {
    if (worker) await killWorkerHard(worker);
    worker = await startForgeWorker(hereEnv);
    const handle = await forge.startDeployTool({ name: 'slow_tool', source: slowTool('d'), testInput: { ms: 5000 } });
    await until(() => readdirSync(runs.tmpRoot).length > 0, 30_000, 'the sandbox test to run');
    await killWorkerHard(worker);
    await until(() => processesMarkedWith(runs.marker).length === 0, 10_000, "the killed worker's processes to end");
    // The deployment is given up while no worker runs, so the restarted worker has no run to resume.
    await env.client.workflow.getHandle(handle.workflowId).terminate('the test ends it while no worker runs');
    // A worker killed while it replaced active.json leaves the lock it held (a process SIGKILLed holding it, here).
    await lockLeftByKilledHolder(lock);
    const left = readdirSync(runs.tmpRoot);
    expect(left.length).toBeGreaterThan(0);
    expect(existsSync(lock)).toBe(true);

    worker = await startForgeWorker(hereEnv);
    await until(() => readdirSync(runs.tmpRoot).length === 0, 10_000, `the dead worker's run directories (${left.join(', ')}) to be removed`);
    expect(existsSync(lock)).toBe(false);
    // And the next deployment publishes as ever.
    const next = await forge.deployTool({ name: 'slow_tool', source: slowTool('e'), testInput: { ms: 10 } });
    expect(next).toMatchObject({ status: 'active', verdict: 'passed' });
    expect((await readActiveIndex(path.join(home, 'agent-tools')))!.tools.slow_tool.version).toBe(next.version);
  } finally {
    runs.dispose();
  }
}, 180_000);

/** A tool that passes its test until `deadline` (epoch ms) and fails it from then on: its verdict depends on when it runs. */
const timeBombTool = (name: string, deadline: number) => `import { z } from 'zod';
export default {
  name: '${name}',
  description: 'Passes until ${new Date(deadline).toISOString()}.',
  inputSchema: z.object({}),
  async execute() {
    if (Date.now() >= ${deadline}) throw new Error('the deadline has passed');
    return { ok: true };
  },
};`;

// Found by reading the code, 2026-11-29: a deployment killed right after its commit ran its checks again on the
// restarted worker (the whole run was one workflow task), and a check that now failed ended the run "rejected" while
// the version it had committed stayed active. A tool whose test passes once and then fails is the attacker's way to
// have the platform report one state and hold another; the checks this run passed before its commit are not run again.
test('SIGKILL right after the commit, then a tool whose test would now fail: the run reports the version it activated', async () => {
  const deadline = Date.now() + 12_000;
  const name = 'time_bomb';
  const killEnv = { ...childEnv, FORGE_SANDBOX_TEST_HERE: 'on', FORGE_FAULT_KILL_AT: 'deployToolWorkflow:commitVersion.after' };
  if (worker) await killWorkerHard(worker);
  worker = await startForgeWorker(killEnv);
  const exited = new Promise((resolve) => worker!.once('exit', resolve));
  const handle = await forge.startDeployTool({ name, source: timeBombTool(name, deadline), testInput: {} });
  await exited;
  // The worker killed itself after the commit (so after a test that passed), before the deadline.
  expect(Date.now()).toBeLessThan(deadline);
  await new Promise((r) => setTimeout(r, deadline - Date.now() + 200));

  worker = await startForgeWorker({ ...childEnv, FORGE_SANDBOX_TEST_HERE: 'on' });
  const result = await handle.result();
  expect(result).toMatchObject({ status: 'active', name, version: 1, verdict: 'passed' });
  // The verdict is the one the commit was made with (the test passed before the deadline).
  expect(result.diagnostics.sandbox).toMatchObject({ status: 'passed' });
  // What the run says is what the platform holds: the listing and agent-tools/.
  expect((await forge.listTools()).tools.find((t) => t.name === name)).toMatchObject({ activeVersion: 1, versions: 1 });
  expect((await readActiveIndex(path.join(home, 'agent-tools')))!.tools[name].version).toBe(1);
  // And the type check was not run again. The kill cost the run its workflow task. If that task held the whole run,
  // the restarted worker ran prepareDeployment again, which reports the check made before the commit. If the check
  // outlasted 80% of the task's timeout (a cold checker), the SDK completed the task holding prepareDeployment before
  // the kill, and the restarted worker replays that step's result from the history: the one check's.
  const events = (await env.client.workflow.getHandle(handle.workflowId, handle.runId).fetchHistory()).events!;
  const killed = events.findIndex((e) => e.workflowTaskTimedOutEventAttributes);
  expect(killed).toBeGreaterThan(0);
  const prepared = events.flatMap((e, i) => (localActivityOf(e) === 'prepareDeployment' ? [i] : []));
  expect(prepared).toHaveLength(1);
  const typecheck = result.diagnostics.stages.find((s) => s.name === 'typecheck');
  if (prepared[0] < killed) expect(typecheck).toMatchObject({ status: 'done', summary: 'no type errors' });
  else expect(typecheck).toMatchObject({ summary: expect.stringContaining("before this run's commit") });
}, 180_000);
