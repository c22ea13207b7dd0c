import { readdirSync } from 'node:fs';
import type { temporal as proto } from '@temporalio/proto';
import type { RunProgress } from '../../src/client';
import { startTestPlatform, useTemporal, type TestPlatform } from '../helpers/platform';
import { processesMarkedWith } from '../helpers/processes';
import { DEPLOY_SHAPES, runShape } from '../helpers/run-shape';
import { adderTool, sleepyTool } from '../helpers/tools';
import { until, watchSandboxRuns } from '../chaos/end-state';

/**
 * Where a deployment's test runs (FORGE_SANDBOX_TEST_HERE, on by default): in the workflow task, as a local activity,
 * when the worker running it has a free sandbox slot; on the sandbox queue when it has none. Either way the worker
 * never has more runs at once than FORGE_SANDBOX_CONCURRENCY (here 1).
 */

const temporal = useTemporal();
const sandbox = watchSandboxRuns();
let platform: TestPlatform;

describe("where a deployment's test runs, with one sandbox slot", () => {
  beforeAll(async () => {
    platform = await startTestPlatform(temporal(), 'pglite', { env: { ...sandbox.platformEnv, FORGE_SANDBOX_CONCURRENCY: '1' } });
  }, 120_000);
  afterAll(async () => {
    await platform?.teardown();
    sandbox.dispose();
  });

  /** The activities a run scheduled on a task queue (a local activity is not one): [type, queue]. */
  async function queuedActivities(workflowId: string): Promise<string[][]> {
    const history = await platform.env.client.workflow.getHandle(workflowId).fetchHistory();
    return (history.events ?? [])
      .map((e: proto.api.history.v1.IHistoryEvent) => e.activityTaskScheduledEventAttributes)
      .filter((a): a is proto.api.history.v1.IActivityTaskScheduledEventAttributes => !!a)
      .map((a) => [a.activityType?.name ?? '', a.taskQueue?.name ?? '']);
  }

  const testSummary = (r: { diagnostics: { stages: { name: string; summary?: string }[] } }) => r.diagnostics.stages.find((s) => s.name === 'test')?.summary;

  test('with a free slot, the test runs in the workflow task: nothing goes to the sandbox queue', async () => {
    const result = await platform.forge.deployTool({ name: 'here_tool', source: adderTool('one', 'here_tool'), testInput: { a: 1, b: 2 } });
    expect(result).toMatchObject({ status: 'active', version: 1, verdict: 'passed' });
    expect(testSummary(result)).toMatch(/^passed in \d+ ms( \(in the first step\))?$/);
    expect(await queuedActivities(result.workflowId)).toEqual([]);
  }, 60_000);

  const allDone = ['validate', 'compile', 'typecheck', 'test', 'commit', 'notify'].map((n) => `${n} done`);

  test('a test here ends the run in one step or two, each with the upserts of its shape', async () => {
    // With spares off (as here), a run of this tool may or may not pass within the first step's wait: either shape is
    // right (test/deploy/deploy.test.ts asks for the one-step shape where spares are on), but nothing in between.
    const result = await platform.forge.deployTool({ name: 'shape_tool', source: adderTool('one', 'shape_tool'), testInput: { a: 1, b: 2 } });
    expect(result).toMatchObject({ status: 'active', version: 1, verdict: 'passed' });
    expect(result.diagnostics.stages.map((s) => `${s.name} ${s.status}`)).toEqual(allDone);
    const shape = await runShape(platform.env.client, result.workflowId);
    expect([DEPLOY_SHAPES.oneStep, DEPLOY_SHAPES.twoSteps]).toContainEqual(shape);
    // The test stage says where the test's verdict was taken.
    expect(testSummary(result)).toMatch(shape.localActivities.length === 1 ? /^passed in \d+ ms \(in the first step\)$/ : /^passed in \d+ ms$/);
  }, 60_000);

  test('a longer test goes on into the second step, with its commit: two local activities, run once', async () => {
    // Each run has a private directory under the watched FORGE_SANDBOX_TMPDIR while it runs: their names, seen.
    const runs = new Set<string>();
    const sampler = setInterval(() => readdirSync(sandbox.tmpRoot).forEach((d) => runs.add(d)), 20);
    let result;
    try {
      result = await platform.forge.deployTool({ name: 'long_tool', source: sleepyTool('long_tool'), testInput: { ms: 1500 } });
    } finally {
      clearInterval(sampler);
    }
    expect(result).toMatchObject({ status: 'active', version: 1, verdict: 'passed' });
    expect(result.diagnostics.stages.map((s) => `${s.name} ${s.status}`)).toEqual(allDone);
    expect(await runShape(platform.env.client, result.workflowId)).toEqual(DEPLOY_SHAPES.twoSteps);
    // The test the first step began is the one the second step took: a run, not two.
    expect(runs.size).toBe(1);
    expect(result.diagnostics.sandbox?.durationMs).toBeGreaterThanOrEqual(1500);
  }, 60_000);

  test('with the slot taken, the test goes to the sandbox queue and waits its turn: never two runs at once', async () => {
    const slow = await platform.forge.startDeployTool({ name: 'slow_tool', source: sleepyTool('slow_tool'), testInput: { ms: 2500 } });
    // A test in the workflow task still shows in the run's progress while it runs: the SDK heartbeats the task (every
    // 1.6 s), and the queries waiting for it are answered then.
    const seen: RunProgress[] = [];
    const slowResult = slow.result({ onProgress: (p) => seen.push(p) });
    await until(() => processesMarkedWith(sandbox.marker).length > 0, 30_000, 'the slow test to run');
    // Each run has a private directory under the watched FORGE_SANDBOX_TMPDIR while it runs.
    let most = 0;
    const sampler = setInterval(() => (most = Math.max(most, readdirSync(sandbox.tmpRoot).length)), 5);
    try {
      const quick = await platform.forge.deployTool({ name: 'here_tool', source: adderTool('two', 'here_tool'), testInput: { a: 1, b: 2 } });
      expect(quick).toMatchObject({ status: 'active', version: 2, verdict: 'passed' });
      expect(testSummary(quick)).toMatch(/^passed in \d+ ms \(on the sandbox queue\)$/);
      expect(await queuedActivities(quick.workflowId)).toEqual([['testTool', platform.config.taskQueues.sandbox]]);
      expect(await slowResult).toMatchObject({ status: 'active', version: 1 });
      expect(seen.some((p) => p.stage === 'test' && p.stages.find((s) => s.name === 'test')?.status === 'running')).toBe(true);
      expect(await queuedActivities(slow.workflowId)).toEqual([]);
    } finally {
      clearInterval(sampler);
    }
    expect(most).toBe(1);
    expect(await sandbox.leftovers()).toEqual({ processes: [], runDirs: [] });
  }, 90_000);
});
