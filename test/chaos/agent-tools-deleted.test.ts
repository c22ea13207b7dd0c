import { spawn } from 'node:child_process';
import { existsSync, rmSync } from 'node:fs';
import path from 'node:path';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { materializeActiveTools, ToolRegistry } from '../../src/registry';
import { startTemporal, startTestPlatform, type TestPlatform } from '../helpers/platform';
import { adderTool } from '../helpers/tools';
import { databaseView, diskView, expectDiskAgreesWithDatabase, stageOf, until } from './end-state';

/**
 * Issue 9, "the worker's disk view of agent-tools/ deleted while it runs (it is rebuilt from the database)": the
 * directory is removed with everything in it (rm -rf) while the worker runs. The database holds every version, so
 * the worker writes the files of every active version and active.json again: at the latest with the next change it
 * publishes, so a deployment in flight brings back the tools it does not touch too. An agent's registry reading the
 * directory (as `forge mcp` does) loses its tools while the directory is gone and finds them again once it is back.
 *
 * (src/registry/rebuild-when-lost.ts rebuilds a lost directory within a second without waiting for a change; the
 * worker starts it once src/worker.ts wires it in. These tests hold either way.)
 */

const slowTool = `import { z } from 'zod';
export default {
  name: 'lost_slow',
  description: 'Its test takes a few seconds.',
  inputSchema: z.object({ ms: z.number() }),
  timeoutMs: 20_000,
  async execute({ ms }: { ms: number }) {
    await new Promise((r) => setTimeout(r, ms));
    return { waited: ms };
  },
};
`;

let env: TestWorkflowEnvironment;
let platform: TestPlatform;
let registry: ToolRegistry | undefined;

beforeAll(async () => {
  env = await startTemporal();
  platform = await startTestPlatform(env, 'pglite');
  for (const [name, variant] of [
    ['lost_a', 'v1'],
    ['lost_b', 'v1'],
    ['lost_b', 'v2'],
  ]) {
    await expect(platform.forge.deployTool({ name, source: adderTool(variant, name), testInput: { a: 1, b: 2 } })).resolves.toMatchObject({ status: 'active' });
  }
  registry = await ToolRegistry.open({ dir: platform.config.agentToolsDir, pollIntervalMs: 100, onReloadError: () => undefined });
}, 120_000);

afterAll(async () => {
  await registry?.close();
  await platform?.teardown();
  await env?.teardown();
});

const dir = () => platform.config.agentToolsDir;
const store = () => platform.workers.store;

/** What the registry serves, as the database's view is shaped. */
const registryView = () => Object.fromEntries(registry!.list().map((t) => [t.name, { version: t.version, contentHash: t.contentHash }]));

/** The registry has caught up with the database (it polls active.json). */
async function registryAgrees(): Promise<void> {
  const expected = await databaseView(store());
  await until(() => JSON.stringify(registryView()) === JSON.stringify(expected), 5_000, `the registry to serve ${JSON.stringify(expected)}`);
}

test('deleted while a deployment runs its sandbox test: its publish writes every active tool again, and the registry has them all', async () => {
  await expectDiskAgreesWithDatabase(store(), dir());
  await registryAgrees();

  const handle = await platform.forge.startDeployTool({ name: 'lost_slow', source: slowTool, testInput: { ms: 2_500 } });
  await until(async () => (await stageOf(env.client.workflow.getHandle(handle.workflowId))) === 'test', 20_000, 'the sandbox test to run');
  rmSync(dir(), { recursive: true, force: true });
  // The registry notices: with no active.json it serves nothing.
  await until(() => registry!.list().length === 0, 5_000, 'the registry to see the directory gone');

  await expect(handle.result()).resolves.toMatchObject({ status: 'active', name: 'lost_slow', version: 1 });
  expect(Object.keys(await databaseView(store())).sort()).toEqual(['lost_a', 'lost_b', 'lost_slow']);
  await expectDiskAgreesWithDatabase(store(), dir());
  await registryAgrees();
  expect(registry!.get('lost_b')?.version).toBe(2);
}, 60_000);

test('deleted while nothing runs: the worker rebuilds it from the database on its own, within seconds, every tool', async () => {
  const before = await databaseView(store());
  rmSync(dir(), { recursive: true, force: true });
  // No change follows: the worker's rebuildWhenLost notices the missing active.json (one look a second).
  await until(() => existsSync(path.join(dir(), 'active.json')), 5_000, 'the worker to rebuild agent-tools/');
  expect((await diskView(dir())).tools).toEqual(before);
  await expectDiskAgreesWithDatabase(store(), dir());
  await registryAgrees();

  // And a change after that lands on the rebuilt directory as usual.
  await expect(platform.forge.rollbackTool('lost_b')).resolves.toMatchObject({ status: 'active', version: 1 });
  await expectDiskAgreesWithDatabase(store(), dir());
  await registryAgrees();
  expect(registry!.get('lost_b')?.version).toBe(1);
  expect(registry!.get('lost_slow')?.version).toBe(1);
}, 60_000);

test('deleted again and again while the worker publishes, the other CPU busy: active.json never names a file that is not there', async () => {
  // The cell above once failed on a quiet machine with active.json back but lost_a's three files missing: a
  // publication had looked at lost_a's manifest (a read on libuv's threads) just before the rm -rf, trusted it, and
  // named lost_a in the active.json it wrote after. Here the deletion races the worker's own publication (its
  // function and its cache of checked versions, as its rebuildWhenLost and every change call it) at a different point
  // each round, while a busy loop takes the other core, and after each round whatever active.json names must be there.
  const hog = spawn(process.execPath, ['-e', 'for (;;) {}'], { stdio: 'ignore' });
  const violations: string[] = [];
  try {
    for (let round = 0; round < 40; round++) {
      const publishing = materializeActiveTools(store(), dir()).catch(() => undefined);
      for (let tick = 0; tick < round % 10; tick++) await new Promise((r) => setImmediate(r));
      rmSync(dir(), { recursive: true, force: true });
      await publishing;
      const disk = await diskView(dir()).catch(() => ({ tools: {}, missingFiles: [] as string[] }));
      for (const file of disk.missingFiles) violations.push(`round ${round}: active.json names ${file}, which is missing`);
    }
  } finally {
    hog.kill('SIGKILL');
  }
  expect(violations).toEqual([]);
  // And the last deletion is repaired by the worker on its own, as in the cell above.
  await until(() => existsSync(path.join(dir(), 'active.json')), 5_000, 'the worker to rebuild agent-tools/');
  await expectDiskAgreesWithDatabase(store(), dir());
  await registryAgrees();
}, 60_000);
