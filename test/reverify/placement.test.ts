import type { ReverifySummary } from '../../src/client';
import { celsiusTool, seedActiveTools } from '../../bench/reverify-seed';
import { startTestPlatform, useTemporal, type TestPlatform } from '../helpers/platform';
import { activityPlacementOf } from '../helpers/run-shape';

const temporal = useTemporal();

/*
 * Where a re-verification run's tests run. With FORGE_SANDBOX_TEST_HERE on (the default; test/reverify/scale.test.ts
 * holds that shape), as local activities of the worker that runs the workflow task; with it off, as activities on the
 * sandbox queue, where every worker that serves it may take one: how an operator spreads a run over several hosts.
 */
describe('re-verification with FORGE_SANDBOX_TEST_HERE=off', () => {
  let platform: TestPlatform;

  beforeAll(async () => {
    platform = await startTestPlatform(temporal(), 'pglite', { env: { FORGE_REVERIFY_INTERVAL: '2h', FORGE_SANDBOX_TEST_HERE: 'off' } });
  }, 120_000);

  afterAll(async () => {
    await platform?.teardown();
  });

  test('every test goes to the sandbox queue, over two batches, with the verdicts a run that tests here gives', async () => {
    const names = Array.from({ length: 5 }, (_, i) => `queued_${i}`);
    await seedActiveTools(platform.workers.store, names.map(celsiusTool));
    const handle = await temporal().client.workflow.start('reverifyToolsWorkflow', {
      taskQueue: platform.config.taskQueues.control,
      workflowId: `tool-reverify/queued-${Date.now()}`,
      args: [{ trigger: 'now', builtin: false, batchSize: 3 }],
    });
    const summary = (await handle.result()) as ReverifySummary;
    expect(summary.counts).toMatchObject({ tested: 5, passed: 5, failed: 0, batches: 2 });
    expect(summary.tools.map((t) => [t.name, t.verdict, t.action])).toEqual(names.map((n) => [n, 'passed', 'none']));

    const placement = await activityPlacementOf(temporal().client, handle.workflowId, handle.firstExecutionRunId);
    expect(placement.scheduled).toEqual(names.map(() => ({ type: 'reverifyTest', taskQueue: platform.config.taskQueues.sandbox })));
    expect(placement.local).not.toContain('reverifyTest');
  }, 120_000);
});
