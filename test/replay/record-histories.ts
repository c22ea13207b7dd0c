/**
 * `npm run histories:record`: records one history of each released workflow shape into test/fixtures/histories/,
 * which test/replay/replay.test.ts replays with the current workflow code. Run it when a shape is released on purpose
 * and no run of the old code is in flight (README, "Changing a workflow"); a change that must not break runs already
 * under way needs `patched()` instead, and the old histories stay.
 *
 * It runs under jest (`npm run histories:record` passes this file as the only test): ts-jest is how this repository
 * runs TypeScript outside dist/, and the name keeps it out of the normal run, which matches `*.test.ts` only. Each
 * shape is checked as it is recorded (the run ended as that shape says), so a recorder that drifted from the workflows
 * fails here rather than saving the wrong history. A real dev server and a real (embedded) database, as the tests use.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { symlink } from 'node:fs/promises';
import path from 'node:path';
import { WorkflowFailedError } from '@temporalio/client';
import { Client } from 'pg';
import { CancelledFailure } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { DefaultLogger, Runtime } from '@temporalio/worker';
import type { ForgeDatabase } from '../../src/db';
import { migrationChecksum } from '../../src/policy';
import { sleep, stageOf, statusOf, until } from '../chaos/end-state';
import { startTemporal, startTestPlatform, type TestPlatform } from '../helpers/platform';
import { postgresBackend } from '../db/backends';
import { agentRepo, FORGE_NODE_MODULES } from '../git/fixture';
import { adderTool } from '../helpers/tools';
import { localActivitiesOf } from '../helpers/run-shape';
import { startLocalX402Network } from '../../src/x402';
import { startFacilitatorServer } from '../../src/x402/facilitator-server';
import { startHostileSeller } from '../helpers/hostile-seller';

const dir = path.join(__dirname, '..', 'fixtures', 'histories');

/** A tool whose sandbox test waits `ms` (its test input): long enough to be caught in its test or commit stage. */
const slowTool = (variant: string, name: string) => `import { z } from 'zod';
export default {
  name: '${name}',
  description: 'Takes its time (${variant}).',
  inputSchema: z.object({ ms: z.number() }),
  timeoutMs: 25_000,
  async execute({ ms }: { ms: number }) {
    await new Promise((r) => setTimeout(r, ms));
    return { waited: ms, variant: '${variant}' };
  },
};
`;

/** A tool whose sandbox test throws: rejected at the test stage. */
const failingTool = (name: string) => `import { z } from 'zod';
export default {
  name: '${name}',
  inputSchema: z.object({ n: z.number() }),
  async execute() { throw new Error('this tool always fails'); },
};
`;

/** A tool with a type error its test never trips over: rejected at the typecheck stage. */
const typeErrorTool = (name: string) => `import { z } from 'zod';
export default {
  name: '${name}',
  inputSchema: z.object({ n: z.number() }),
  async execute(input: { n: number }) { const label: number = 'n is ' + input.n; return { label }; },
};
`;

/**
 * Holds the embedded database's one session in a transaction while `during` runs: a step that needs the database
 * waits meanwhile, so a run can be caught in the middle of it (as test/chaos/cancellation.test.ts does).
 */
async function whileHeld(database: ForgeDatabase, during: () => Promise<void>): Promise<void> {
  let release!: () => void;
  const released = new Promise<void>((r) => (release = r));
  let entered!: () => void;
  const inside = new Promise<void>((r) => (entered = r));
  const held = database.db.transaction(async () => {
    entered();
    await released;
  });
  await inside;
  try {
    await during();
  } finally {
    release();
    await held;
  }
}

/** Whether a run ended cancelled (its result's failure is a CancelledFailure); any other failure is rethrown. */
async function endedCancelled(result: Promise<unknown>): Promise<boolean> {
  try {
    await result;
    return false;
  } catch (err) {
    if (err instanceof WorkflowFailedError && err.cause instanceof CancelledFailure) return true;
    throw err;
  }
}

let env: TestWorkflowEnvironment;
let platform: TestPlatform;
let builtinRepo: Awaited<ReturnType<typeof agentRepo>> | undefined;
const recorded: string[] = [];

beforeAll(async () => {
  // The rejected and failed shapes make activities fail on purpose: only the SDK's errors are worth printing here.
  Runtime.install({ logger: new DefaultLogger('ERROR') });
  env = await startTemporal();
  // The built-in repository re-verification checks (a copy of examples/agent-repo), so its steps are recorded too.
  builtinRepo = await agentRepo();
  await symlink(FORGE_NODE_MODULES, path.join(builtinRepo.repo, 'node_modules'), 'dir');
  platform = await startTestPlatform(env, 'pglite', { env: { FORGE_BUILTIN_REPO: builtinRepo.repo } });
}, 120_000);

afterAll(async () => {
  await platform?.teardown();
  await builtinRepo?.dispose();
  await env?.teardown();
  if (recorded.length > 0)
    process.stdout.write(`\nrecorded ${recorded.length} histories in ${path.relative(process.cwd(), dir)}/:\n  ${recorded.join('\n  ')}\n`);
});

/**
 * Saves the history of a run that has ended as `<label>.history.b64`: binary protobuf in base64, exact, and read back
 * without protobufjs's JSON layer (which breaks under jest). Without a run ID, the newest run of the ID, which is the
 * one just awaited (runs are recorded one after another).
 */
async function save(label: string, workflowId: string, runId?: string): Promise<temporal.api.history.v1.IHistory> {
  const handle = env.client.workflow.getHandle(workflowId, runId);
  // A refused run ends FAILED (src/workflows/refusal.ts), whatever typed result the client made of it.
  if (/-(rejected|refused|failed)\b/.test(label)) expect(await statusOf(handle)).toBe('FAILED');
  const history = await handle.fetchHistory();
  const bytes = temporal.api.history.v1.History.encode(history).finish();
  writeFileSync(path.join(dir, `${label}.history.b64`), Buffer.from(bytes).toString('base64') + '\n');
  recorded.push(`${label}  (${workflowId})`);
  return history;
}

/** Starts a workflow under an ID the recorder chooses (the client's rollback, delete and list IDs are random). */
function start(workflow: string, workflowId: string, args: unknown[]) {
  return env.client.workflow.start(workflow, { taskQueue: platform.config.taskQueues.control, workflowId, args });
}

test('records one history of each released workflow shape', async () => {
  const { forge } = platform;
  const tool = 'replayed';
  const deploy = async (label: string | undefined, source: string, testInput: unknown, expected: Record<string, unknown>, steps?: string[]) => {
    const handle = await forge.startDeployTool({ name: tool, source, testInput });
    expect(await handle.result()).toMatchObject(expected);
    const history = label ? await save(label, handle.workflowId, handle.runId) : undefined;
    if (history && steps) expect(localActivitiesOf(history)).toEqual(steps);
  };

  // deployToolWorkflow. The same content twice is two runs under one workflow ID: their run IDs tell them apart. A
  // quick test passes within the first step's wait for it, and that step commits too: one local activity. A longer one
  // is taken, still running, by the second step, which commits.
  await deploy('deploy-active-one-step', adderTool('a', tool), { a: 1, b: 2 }, { status: 'active', version: 1 }, ['prepareDeployment']);
  await deploy('deploy-unchanged', adderTool('a', tool), { a: 1, b: 2 }, { status: 'active', version: 1, unchanged: true });
  await deploy('deploy-active', slowTool('b', tool), { ms: 1_500 }, { status: 'active', version: 2 }, ['prepareDeployment', 'testAndCommitHere']);
  await deploy('deploy-rejected-compile', 'export default {', {}, { status: 'rejected', diagnostics: { stage: 'compile' } });
  await deploy('deploy-rejected-typecheck', typeErrorTool(tool), { n: 1 }, { status: 'rejected', diagnostics: { stage: 'typecheck' } });
  await deploy('deploy-rejected-test', failingTool(tool), { n: 1 }, { status: 'rejected', diagnostics: { stage: 'test' } });

  // Cancelled in its sandbox test: the activity is cancelled, nothing was stored. The restore, registered before the
  // step that tests and commits, runs and finds no activation of this run: nothing moves.
  {
    const started = await forge.startDeployTool({ name: tool, source: slowTool('cancel-in-test', tool), testInput: { ms: 20_000 } });
    const handle = env.client.workflow.getHandle(started.workflowId, started.runId);
    await until(async () => (await stageOf(handle)) === 'test', 20_000, 'the sandbox test to run');
    await sleep(1_000); // the activity is running, not only scheduled
    await handle.cancel();
    expect(await endedCancelled(started.result())).toBe(true);
    const history = await save('deploy-cancelled-test', started.workflowId, started.runId);
    expect(localActivitiesOf(history)).toEqual(['prepareDeployment', 'testAndCommitHere', 'restoreActive']);
    expect((await platform.workers.store.getActive(tool))?.version).toBe(2);
  }

  // Compensation: cancelled while its commit waits for the database. The commit lands, then the saga's restoreActive
  // makes the previous version active again and the run ends cancelled.
  {
    const started = await forge.startDeployTool({ name: tool, source: slowTool('compensated', tool), testInput: { ms: 4_000 } });
    const handle = env.client.workflow.getHandle(started.workflowId, started.runId);
    // The test runs in the workflow task, whose queries are answered at its heartbeats (every 1.6 s): a long test.
    await until(async () => (await stageOf(handle)) === 'test', 20_000, 'the sandbox test to run');
    await whileHeld(platform.database, async () => {
      // The commit follows the 4 s test in the same step (testAndCommitHere), and waits for the database.
      await sleep(4_500);
      await handle.cancel();
      await sleep(500);
    });
    expect(await endedCancelled(started.result())).toBe(true);
    const history = await save('deploy-compensated', started.workflowId, started.runId);
    expect(localActivitiesOf(history)).toEqual(expect.arrayContaining(['testAndCommitHere', 'restoreActive']));
    expect((await platform.workers.store.getActive(tool))?.version).toBe(2);
  }

  // rollbackToolWorkflow.
  {
    const result = await forge.rollbackTool(tool);
    expect(result).toMatchObject({ status: 'active', version: 1 });
    await save('rollback-active', result.workflowId);
    const rejected = await forge.rollbackTool(tool, { toVersion: 99 });
    expect(rejected).toMatchObject({ status: 'rejected' });
    await save('rollback-rejected', rejected.workflowId);
  }

  // listToolsWorkflow.
  {
    const handle = await start('listToolsWorkflow', 'forge-query/list-tools/replay', []);
    expect(JSON.stringify(await handle.result())).toContain(tool);
    await save('list-tools', handle.workflowId, handle.firstExecutionRunId);
  }

  // deleteToolWorkflow.
  {
    const result = await forge.deleteTool(tool);
    expect(result).toMatchObject({ status: 'deleted', previousVersion: 1 });
    await save('delete-deleted', result.workflowId);
    const rejected = await forge.deleteTool('no_such_tool');
    expect(rejected).toMatchObject({ status: 'rejected' });
    await save('delete-rejected', rejected.workflowId);
  }

  // Rollback and delete are not cancellable: cancelled at once, each runs to its end and says what it did.
  {
    const other = 'replayed_cancel';
    for (const variant of ['a', 'b']) {
      await expect(forge.deployTool({ name: other, source: adderTool(variant, other), testInput: { a: 1, b: 2 } })).resolves.toMatchObject({
        status: 'active',
      });
    }
    const rollback = await start('rollbackToolWorkflow', `tool-rollback/${other}/replay`, [{ name: other }]);
    await rollback.cancel();
    expect(await rollback.result()).toMatchObject({ status: 'active', version: 1 });
    await save('rollback-cancel-requested', rollback.workflowId, rollback.firstExecutionRunId);
    const deletion = await start('deleteToolWorkflow', `tool-delete/${other}/replay`, [{ name: other }]);
    await deletion.cancel();
    expect(await deletion.result()).toMatchObject({ status: 'deleted' });
    await save('delete-cancel-requested', deletion.workflowId, deletion.firstExecutionRunId);
  }

  // migrateSchemaWorkflow: applied, alreadyApplied (a new run under the same ID), rejected by the policy, failed in
  // PostgreSQL (a second migration of another name creating the same table), and cancelled at once (runs to its end).
  {
    const migrate = async (label: string, name: string, sql: string, status: string) => {
      const result = await forge.migrateSchema({ name, sql });
      expect(result).toMatchObject({ status });
      await save(label, result.workflowId);
    };
    await migrate('migrate-applied', 'agent_replayed', 'CREATE TABLE agent_replayed (id int)', 'applied');
    await migrate('migrate-already-applied', 'agent_replayed', 'CREATE TABLE agent_replayed (id int)', 'alreadyApplied');
    await migrate('migrate-rejected', 'agent_replayed_drop', 'DROP TABLE agent_replayed', 'rejected');
    await migrate('migrate-failed', 'agent_replayed_again', 'CREATE TABLE agent_replayed (id int)', 'failed');

    const name = 'agent_replayed_cancel';
    const sql = 'CREATE TABLE agent_replayed_cancel (id int)';
    const handle = await start('migrateSchemaWorkflow', `schema-migrate/${name}`, [{ name, sql, checksum: migrationChecksum(sql) }]);
    await handle.cancel();
    expect(await handle.result()).toMatchObject({ status: 'applied', name });
    expect(await statusOf(handle)).toBe('COMPLETED');
    await save('migrate-cancel-requested', handle.workflowId, handle.firstExecutionRunId);
  }

  // promoteBuiltinWorkflow: promoted, rejected at a stage, refused by the plan (on a fresh copy of examples/agent-repo).
  {
    const repo = await agentRepo();
    await symlink(FORGE_NODE_MODULES, path.join(repo.repo, 'node_modules'), 'dir');
    try {
      const sum = path.join(repo.repo, 'src/tools/sum.ts');
      const promote = async (label: string, change: { path: string; content: string }, status: string) => {
        const result = await forge.promoteBuiltin({ repo: repo.repo, changes: [change], message: label });
        expect(result).toMatchObject({ status });
        await save(label, result.workflowId);
      };
      await promote('promote-promoted', { path: 'src/tools/sum.ts', content: `${readFileSync(sum, 'utf8')}\n// replayed\n` }, 'promoted');
      await promote('promote-rejected-compile', { path: 'src/tools/sum.ts', content: 'export const broken: number = "no";\n' }, 'rejected');
      await promote('promote-refused-plan', { path: 'README.md', content: 'unmapped\n' }, 'rejected');
    } finally {
      await repo.dispose();
    }
  }

  // listMigrationsWorkflow.
  {
    const handle = await start('listMigrationsWorkflow', 'forge-query/list-migrations/replay', []);
    expect(JSON.stringify(await handle.result())).toContain('agent_replayed');
    await save('list-migrations', handle.workflowId, handle.firstExecutionRunId);
  }
}, 300_000);

// deployToolWorkflow's other test path: no sandbox slot free where the workflow task runs, so testAndCommitHere answers
// `busy` at once, the test goes to the sandbox queue (where it waits for the slot) and the commit is a step of its own.
test('records the deployment shape whose test goes to the sandbox queue (no slot free here)', async () => {
  const busy = await startTestPlatform(env, 'pglite', { env: { FORGE_SANDBOX_CONCURRENCY: '1', FORGE_REVERIFY_INTERVAL: 'off' } });
  try {
    const slow = await busy.forge.startDeployTool({ name: 'slot_holder', source: slowTool('holds the slot', 'slot_holder'), testInput: { ms: 4_000 } });
    const slowHandle = env.client.workflow.getHandle(slow.workflowId, slow.runId);
    await until(async () => (await stageOf(slowHandle)) === 'test', 20_000, 'the slow test to run');
    await sleep(500); // the test holds the one slot, not only its stage
    const queued = await busy.forge.startDeployTool({ name: 'replayed_queued', source: adderTool('queued', 'replayed_queued'), testInput: { a: 1, b: 2 } });
    const result = await queued.result();
    expect(result).toMatchObject({ status: 'active', version: 1 });
    expect(result.diagnostics.stages.find((s) => s.name === 'test')?.summary).toMatch(/\(on the sandbox queue\)$/);
    const history = await save('deploy-active-queued', queued.workflowId, queued.runId);
    expect(localActivitiesOf(history)).toEqual(['prepareDeployment', 'testAndCommitHere', 'commitAndPublish']);
    expect(await slow.result()).toMatchObject({ status: 'active' });
  } finally {
    await busy.teardown();
  }
}, 120_000);

/**
 * A tool whose test fails from `failsAfter` (epoch ms) on: how a reverification run is made to quarantine and degrade.
 * A clock, not a file: a sandbox run sees none of the host's files but its own (its view of /dev and /tmp is private).
 */
const expiringTool = (name: string, variant: string, failsAfter: number | undefined) => `import { z } from 'zod';
export default {
  name: '${name}',
  inputSchema: z.object({ n: z.number() }),
  async execute({ n }: { n: number }) {
    ${failsAfter !== undefined ? `if (Date.now() >= ${failsAfter}) throw new Error('its dependency is gone');` : ''}
    return { n, variant: '${variant}' };
  },
};
`;

/**
 * One re-verification run that continues as new and quarantines, degrades and summarizes, on `on`; saved as
 * `<label>-continued` (its first run) and `<label>-summarized` (its last).
 */
async function recordReverify(on: TestPlatform, label: string, workflowId: string, builtin: boolean): Promise<void> {
  const { forge } = on;
  const deploy = async (name: string, variant: string, failsAfter?: number) =>
    expect(await forge.deployTool({ name, source: expiringTool(name, variant, failsAfter), testInput: { n: 1 } })).toMatchObject({ status: 'active' });
  await deploy('rv_degrades', 'v1');
  await deploy('rv_stays_a', 'v1');
  await deploy('rv_stays_b', 'v1');
  // Two deployments whose tests pass now and fail once the clock passes `expiry`, before the run below starts.
  const expiry = Date.now() + 20_000;
  await deploy('rv_degrades', 'v2', expiry);
  await deploy('rv_quarantined', 'v1', expiry);
  await sleep(Math.max(0, expiry - Date.now() + 100));
  const handle = await env.client.workflow.start('reverifyToolsWorkflow', {
    taskQueue: on.config.taskQueues.control,
    workflowId,
    args: [{ batchSize: 3, ...(builtin ? {} : { builtin: false }) }],
  });
  const summary = (await handle.result()) as { quarantined: string[]; degraded: string[]; counts: { batches: number } };
  expect(summary).toMatchObject({ quarantined: ['rv_quarantined'], degraded: ['rv_degrades'] });
  expect(summary.counts.batches).toBeGreaterThanOrEqual(2);
  if (builtin) expect(summary).toMatchObject({ builtin: expect.objectContaining({ status: 'passed' }) });
  // The first run (its batch acted on, then continued as new) and the last (the summary).
  await save(`${label}-continued`, handle.workflowId, handle.firstExecutionRunId);
  await save(`${label}-summarized`, handle.workflowId);
}

// The tests as local activities where the workflow task runs (FORGE_SANDBOX_TEST_HERE, on by default).
test('records the re-verification shapes (continued as new; quarantined, degraded, summarized)', async () => {
  await recordReverify(platform, 'reverify', 'tool-reverify/replay', true);
}, 120_000);

// The tests on the sandbox queue (FORGE_SANDBOX_TEST_HERE=off).
test('records the re-verification shapes whose tests go to the sandbox queue', async () => {
  const queued = await startTestPlatform(env, 'pglite', { env: { FORGE_SANDBOX_TEST_HERE: 'off', FORGE_REVERIFY_INTERVAL: 'off' } });
  try {
    await recordReverify(queued, 'reverify-queued', 'tool-reverify/replay-queued', false);
  } finally {
    await queued.teardown();
  }
}, 120_000);

test('records the x402 shapes (sell: refused, which makes the ledger through its migration child, and offered; pay: paid, refused, free, cancelled; the P&L read)', async () => {
  const net = await startLocalX402Network();
  const facilitator = await startFacilitatorServer({ facilitator: net.facilitator });
  const [payee, wallet] = await Promise.all([net.newWallet(), net.newWallet(10_000_000n)]);
  const x402 = await startTestPlatform(env, 'pglite', {
    env: {
      FORGE_X402_WALLET_KEY: wallet.privateKey,
      FORGE_X402_RPC_URL: net.rpcUrl,
      FORGE_X402_ALLOWED_ASSETS: net.token.address,
      FORGE_X402_FACILITATOR_URL: facilitator.url,
      FORGE_X402_SELL_ASSET: net.token.address,
      FORGE_X402_SELL_NETWORK: net.network,
      FORGE_X402_PAY_TO: payee.address,
      FORGE_REVERIFY_INTERVAL: 'off',
    },
  });
  try {
    const { forge } = x402;
    expect(await forge.deployTool({ name: 'sold', source: adderTool('sold', 'sold'), testInput: { a: 1, b: 2 } })).toMatchObject({ status: 'active' });
    const refusedSale = await forge.sell('not_active', { price: 1_000n });
    expect(refusedSale.status).toBe('refused');
    await save('sell-refused', refusedSale.workflowId);
    const offered = await forge.sell('sold', { price: 25_000n });
    expect(offered.status).toBe('offered');
    await save('sell-offered', offered.workflowId);

    const body = JSON.stringify({ a: 2, b: 3 });
    const paid = await forge.pay(offered.url!, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
    expect(paid).toMatchObject({ status: 'paid', httpStatus: 200 });
    await save('pay-paid', paid.workflowId);
    const refused = await forge.pay(offered.url!, { method: 'POST', body, maxAmount: 1n });
    expect(refused).toMatchObject({ status: 'refused', limit: 'maxPerPayment' });
    await save('pay-refused', refused.workflowId);
    const free = await forge.pay(`${facilitator.url}/supported`);
    expect(free).toMatchObject({ status: 'paid', amount: '0' });
    await save('pay-free', free.workflowId);
    // A seller that answers without settling: the run waits its grace, cancels the authorization on the chain, fails.
    const silent = await startHostileSeller(net, { price: 1_000n });
    try {
      const cancelled = await forge.pay(silent.url('/silent'));
      expect(cancelled).toMatchObject({ status: 'failed', reason: expect.stringContaining('cancelled the authorization') });
      await save('pay-cancelled', cancelled.workflowId);
    } finally {
      await silent.close();
    }

    const pnl = await x402.env.client.workflow.start('readPnlWorkflow', {
      taskQueue: x402.config.taskQueues.control,
      workflowId: 'forge-query/pnl/replay',
      args: [{ by: 'tool' }],
    });
    expect(JSON.stringify(await pnl.result())).toContain('"sold"');
    await save('read-pnl', pnl.workflowId, pnl.firstExecutionRunId);
  } finally {
    await x402.teardown();
    await facilitator.close();
    await net.stop();
  }
}, 180_000);

// migrateSchemaWorkflow's round-three shape on PostgreSQL: a core-table ADD COLUMN whose lock is at first not granted
// (the run waits it out), then an index on the core table built CONCURRENTLY as its own step, then the record.
test('records the online-index migration shape (PostgreSQL: a lock waited out, an index built CONCURRENTLY)', async () => {
  const url = process.env.DATABASE_URL;
  if (!url) throw new Error('recording the online-index shape needs DATABASE_URL (a PostgreSQL server)');
  const backend = postgresBackend(url);
  const pg = await startTestPlatform(env, 'postgres', { backend, env: { FORGE_MIGRATION_CORE_LOCK_TIMEOUT_MS: '200' } });
  const app = new Client({ connectionString: backend.url });
  await app.connect();
  try {
    await app.query('CREATE TABLE orders (id bigserial PRIMARY KEY, customer varchar(80))');
    await app.query("INSERT INTO orders (customer) SELECT 'c' || g FROM generate_series(1, 1000) g");
    await app.query('BEGIN');
    await app.query('SELECT count(*) FROM orders');
    const release = sleep(1_000).then(() => app.query('COMMIT'));
    const result = await pg.forge.migrateSchema({
      name: 'replayed_online',
      sql: 'ALTER TABLE orders ADD COLUMN agent_note text;\nCREATE INDEX agent_orders_customer_idx ON orders (customer);\n',
    });
    await release;
    expect(result).toMatchObject({ status: 'applied', online: [{ index: 'agent_orders_customer_idx', outcome: 'built' }] });
    await save('migrate-online', result.workflowId);
  } finally {
    await app.end();
    await pg.teardown();
  }
}, 120_000);
