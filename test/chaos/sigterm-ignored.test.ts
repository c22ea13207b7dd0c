import { WorkflowFailedError } from '@temporalio/client';
import { CancelledFailure } from '@temporalio/common';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { startTemporal, startTestPlatform, type TestPlatform } from '../helpers/platform';
import { processesMarkedWith } from '../helpers/processes';
import { adderTool } from '../helpers/tools';
import { expectDiskAgreesWithDatabase, stageOf, statusOf, until, watchSandboxRuns } from './end-state';

/**
 * Issue 9, "a stage process that ignores SIGTERM": a tool whose test run ignores SIGTERM, keeps its event loop busy
 * forever, and starts a shell of its own in a new session that ignores SIGTERM too and sleeps in a loop. Through the
 * deployment workflow, once overrunning its own timeoutMs and once cancelled by the client mid-test: the sandbox
 * kills the whole tree anyway (it never asks politely: SIGKILL to the PID namespace's init, or to the group and every
 * process carrying the run's marker), the run ends, and no process of the run remains (/proc, by the marker each run
 * process carries in its environment) and no run directory either. The sandbox's own suite
 * (test/sandbox/sandbox.test.ts) covers timeouts of a busy loop and of a run that never settles, called directly;
 * this is the same containment reached through Temporal and the worker.
 */

const stubborn = (timeoutMs: number) => `import { spawn } from 'node:child_process';
import { z } from 'zod';
export default {
  name: 'stubborn',
  description: 'Ignores SIGTERM, and so does the shell it leaves behind.',
  inputSchema: z.object({}),
  timeoutMs: ${timeoutMs},
  async execute() {
    process.on('SIGTERM', () => {});
    spawn('/bin/sh', ['-c', 'trap "" TERM; while :; do sleep 1; done'], { detached: true, stdio: 'ignore' }).unref();
    setInterval(() => {}, 1000);
    return new Promise(() => {});
  },
};
`;

let env: TestWorkflowEnvironment;
let platform: TestPlatform;
let sandbox: ReturnType<typeof watchSandboxRuns>;

beforeAll(async () => {
  sandbox = watchSandboxRuns();
  env = await startTemporal();
  platform = await startTestPlatform(env, 'pglite', { env: sandbox.platformEnv });
  await expect(platform.forge.deployTool({ name: 'stubborn', source: adderTool('v1', 'stubborn'), testInput: { a: 1, b: 2 } })).resolves.toMatchObject({
    status: 'active',
    version: 1,
  });
}, 120_000);

afterAll(async () => {
  await platform?.teardown();
  await env?.teardown();
  sandbox?.dispose();
});

/** The run's processes are up: the harness and the shell that ignores SIGTERM. */
const shellIsRunning = () => processesMarkedWith(sandbox.marker).some((p) => p.cmdline.includes('trap'));

async function expectNothingStoredNothingLeft(): Promise<void> {
  const store = platform.workers.store;
  expect((await store.listVersions('stubborn')).map((v) => v.version)).toEqual([1]);
  expect((await store.getActive('stubborn'))?.version).toBe(1);
  await expectDiskAgreesWithDatabase(store, platform.config.agentToolsDir);
  expect(await sandbox.leftovers()).toEqual({ processes: [], runDirs: [] });
}

test('overrunning its timeoutMs: the tree is killed, the deployment is rejected with a timeout, nothing is left', async () => {
  const handle = await platform.forge.startDeployTool({ name: 'stubborn', source: stubborn(2_500), testInput: {} });
  await until(shellIsRunning, 20_000, 'the run and its SIGTERM-ignoring shell to be up');
  const result = await handle.result();
  expect(result).toMatchObject({ status: 'rejected', verdict: 'timeout', diagnostics: { stage: 'test' } });
  expect(result.diagnostics.message).toMatch(/timeoutMs of 2500 ms/);
  expect(processesMarkedWith(sandbox.marker)).toEqual([]);
  await expectNothingStoredNothingLeft();
}, 60_000);

test('cancelled by the client mid-test: the tree is killed before the run ends cancelled, nothing is left', async () => {
  const started = await platform.forge.startDeployTool({ name: 'stubborn', source: stubborn(25_000), testInput: {} });
  const handle = env.client.workflow.getHandle(started.workflowId);
  await until(async () => shellIsRunning() && (await stageOf(handle)) === 'test', 20_000, 'the run and its SIGTERM-ignoring shell to be up');
  const cancelledAt = Date.now();
  await handle.cancel();
  const ended = await started.result().then(
    () => 'completed',
    (err: unknown) => (err instanceof WorkflowFailedError && err.cause instanceof CancelledFailure ? 'cancelled' : String(err)),
  );
  expect(ended).toBe('cancelled');
  expect(Date.now() - cancelledAt).toBeLessThan(8_000);
  expect(await statusOf(handle)).toBe('CANCELLED');
  // The run waited for its sandbox step, which kills the tree before it reports the cancellation.
  expect(processesMarkedWith(sandbox.marker)).toEqual([]);
  await expectNothingStoredNothingLeft();
}, 60_000);
