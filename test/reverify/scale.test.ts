import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { ReverifySummary } from '../../src/client';
import { seedActiveTools, type SeedTool } from '../../bench/reverify-seed';
import { startTestPlatform, useTemporal, type TestPlatform } from '../helpers/platform';
import { activityPlacementOf } from '../helpers/run-shape';
import { projectNodeModules } from '../../src/sandbox/paths';

const temporal = useTemporal();

/*
 * Issue 12's scale case: 500 active tools, 7 of which import a local package that the test then breaks (its 2.0
 * renames the export they call). One run quarantines exactly those 7 (they have no earlier version) and leaves the
 * other 493 active. The tools are stored as a deployment's commit stores them (bench/reverify-seed.ts): 500
 * deployments first would take minutes and test nothing of re-verification.
 */
const TOTAL = 500;
const BROKEN = ['rot_a', 'rot_b', 'rot_c', 'rot_d', 'rot_e', 'rot_f', 'rot_g'];

// Among the installed packages: a run reads those, nothing else of the host's files.
const pkgDir = mkdtempSync(path.join(projectNodeModules(), '.forge-reverify-scale-'));
const lib = path.join(pkgDir, 'lib.mjs');

const tool = (name: string, usesPackage: boolean): SeedTool => ({
  name,
  testInput: { n: 3 },
  source: `${usesPackage ? `import { scale } from ${JSON.stringify(lib)};\n` : ''}import { z } from 'zod';
export default {
  name: '${name}',
  description: 'a tool of the 500-tool re-verification',
  inputSchema: z.object({ n: z.number() }),
  async execute({ n }: { n: number }) {
    return { value: ${usesPackage ? 'scale(n)' : 'n + 1'} };
  },
};
`,
});

describe('re-verification of 500 tools', () => {
  let platform: TestPlatform;

  beforeAll(async () => {
    writeFileSync(lib, 'export function scale(n) { return n * 2; }\n');
    chmodSync(pkgDir, 0o755);
    chmodSync(lib, 0o644);
    platform = await startTestPlatform(temporal(), 'pglite', { env: { FORGE_REVERIFY_INTERVAL: '2h' } });
  }, 120_000);

  afterAll(async () => {
    await platform?.teardown();
    rmSync(pkgDir, { recursive: true, force: true });
  });

  test('7 of 500 import a package that breaks: exactly those 7 are quarantined, the 493 others stay active', async () => {
    const plain = Array.from({ length: TOTAL - BROKEN.length }, (_, i) => tool(`tool_${String(i).padStart(3, '0')}`, false));
    await seedActiveTools(platform.workers.store, [...plain, ...BROKEN.map((n) => tool(n, true))]);
    expect(await platform.workers.store.listActive()).toHaveLength(TOTAL);

    writeFileSync(lib, '// 2.0: scale() is now multiply()\nexport function multiply(n, by = 2) { return n * by; }\n');
    const handle = await temporal().client.workflow.start('reverifyToolsWorkflow', {
      taskQueue: platform.config.taskQueues.control,
      workflowId: `tool-reverify/scale-${Date.now()}`,
      args: [{ trigger: 'now', builtin: false }],
    });
    const summary = (await handle.result()) as ReverifySummary;

    expect(summary.counts).toMatchObject({ tested: TOTAL, passed: TOTAL - BROKEN.length, failed: BROKEN.length });
    // 100 per batch, each ending in continue-as-new (the fifth is full, so a sixth finds nothing left).
    expect(summary.counts.batches).toBeGreaterThanOrEqual(5);
    expect(summary.quarantined.sort()).toEqual(BROKEN);
    expect(summary.degraded).toEqual([]);
    expect(summary.flaky).toEqual([]);
    const active = (await platform.workers.store.listActive()).map((a) => a.name);
    expect(active).toHaveLength(TOTAL - BROKEN.length);
    expect(active.filter((n) => BROKEN.includes(n))).toEqual([]);
    expect((await platform.forge.listTools()).tools.filter((t) => t.status !== 'active').map((t) => [t.name, t.status])).toEqual(
      BROKEN.map((n) => [n, 'quarantined']),
    );
    // Every test ran where the run's workflow task ran (FORGE_SANDBOX_TEST_HERE, on by default), as a local activity:
    // the 493 that passed once, the 7 broken twice (test, retest), and nothing went to the server's task queues.
    const placement = await activityPlacementOf(temporal().client, handle.workflowId, handle.firstExecutionRunId);
    expect(placement.local.filter((type) => type === 'reverifyTest')).toHaveLength(TOTAL + BROKEN.length);
    expect(placement.scheduled).toEqual([]);
  }, 600_000);
});
