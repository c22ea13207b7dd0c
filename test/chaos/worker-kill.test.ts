import type { ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { ForgeClient } from '../../src/client';
import { attemptsDirOf } from '../../src/platform/attempt-ledger';
import { startTemporal } from '../helpers/platform';
import { killWorkerHard, startForgeWorker } from './forge-worker';

/**
 * A worker killed with SIGKILL in the middle of a deployment, then restarted, must end in the same state as an
 * uninterrupted run: the deployment finishes, and database, disk and the client's view agree. The worker is the real
 * `forge worker` (dist/, built by `npm test` before jest) in its own process, on embedded PGlite.
 */

const slowTool = (marker: string) => `import { z } from 'zod';
export default {
  name: 'slow_tool',
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
  };
  forge = ForgeClient.fromClient(env.client, { taskQueue: childEnv.FORGE_TASK_QUEUE_CONTROL });
}, 120_000);

afterAll(async () => {
  if (worker) await killWorkerHard(worker);
  await env?.teardown();
  if (home) rmSync(home, { recursive: true, force: true });
});

test('SIGKILL of the worker during the sandbox test, then a restart: the deployment finishes, state agrees', async () => {
  worker = await startForgeWorker(childEnv);
  const handle = await forge.startDeployTool({ name: 'slow_tool', source: slowTool('a'), testInput: { ms: 2500 } });
  // Wait until the sandbox test runs (the workflow says so once it schedules it; the worker has the attempt on file once
  // it has started it, before the tool's 2.5 s begin), then kill the worker and everything in its process group.
  for (let i = 0; i < 200; i++) {
    if ((await handle.progress())?.stage === 'test' && attemptsOnFile(home) > 0) break;
    await new Promise((r) => setTimeout(r, 50));
  }
  expect((await handle.progress())?.stage).toBe('test');
  expect(attemptsOnFile(home)).toBe(1);
  await killWorkerHard(worker);

  worker = await startForgeWorker(childEnv);
  const result = await handle.result();
  expect(result).toMatchObject({ status: 'active', name: 'slow_tool', version: 1, verdict: 'passed' });
  // The restarted worker handed the killed attempt back at once (src/platform/attempt-ledger.ts): the attempt that
  // passed is the second, and what ended the first is the dead worker, not a heartbeat timeout run out.
  const history = await env.client.workflow.getHandle(handle.workflowId, handle.runId).fetchHistory();
  const started = history.events!.map((e) => e.activityTaskStartedEventAttributes).filter((a) => a && a.attempt! > 1);
  expect(started).toEqual([expect.objectContaining({ attempt: 2, lastFailure: expect.objectContaining({ applicationFailureInfo: expect.objectContaining({ type: 'ForgeWorkerDied' }) }) })]);

  const index = JSON.parse(readFileSync(path.join(home, 'agent-tools', 'active.json'), 'utf8'));
  expect(index.tools.slow_tool.version).toBe(1);
  for (const ext of ['ts', 'mjs', 'json']) expect(existsSync(path.join(home, 'agent-tools', 'slow_tool', `v1.${ext}`))).toBe(true);
  const tools = await forge.listTools();
  expect(tools.tools).toEqual([expect.objectContaining({ name: 'slow_tool', activeVersion: 1, versions: 1 })]);
}, 180_000);

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
  const index = JSON.parse(readFileSync(path.join(home, 'agent-tools', 'active.json'), 'utf8'));
  expect(index.tools.slow_tool.version).toBe(2);
  const again = await forge.deployTool({ name: 'slow_tool', source: slowTool('b'), testInput: { ms: 10 } });
  expect(again).toMatchObject({ status: 'active', version: 2, unchanged: true });
  expect((await forge.listTools()).tools).toEqual([expect.objectContaining({ name: 'slow_tool', activeVersion: 2, versions: 2 })]);
}, 180_000);
