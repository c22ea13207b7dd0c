import { WorkflowFailedError, type WorkflowHandle } from '@temporalio/client';
import { CancelledFailure } from '@temporalio/common';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { sql } from 'drizzle-orm';
import type { MigrateSchemaResult } from '../../src/client';
import type { ForgeDatabase } from '../../src/db';
import { postgresBackend, type TestBackend } from '../db/backends';
import { startTemporal, startTestPlatform, type TestPlatform } from '../helpers/platform';
import { processesMarkedWith } from '../helpers/processes';
import { adderTool } from '../helpers/tools';
import { migrationChecksum } from '../../src/policy';
import { columnExists, migrationRows, relationExists } from '../migrate/helpers';
import { diskView, expectDiskAgreesWithDatabase, sleep, stageOf, statusOf, until, watchSandboxRuns } from './end-state';
import { describeIf } from '../helpers/skip';

/**
 * Issue 9, "cancellation from the client in the middle of each workflow (compensations run, nothing left)": an
 * operator's `cancel()` on the run's handle at a chosen stage of each workflow. Each test checks what a user would:
 * how the run ended and what its result or failure says, the database's rows, agent-tools/ on disk, and (for the
 * sandbox) that no process or run directory is left. The state is always whole and the run says which: done (the
 * result says so) or untouched / compensated (the run ends cancelled), never half.
 *
 * A deployment is cancellable up to its end: in its sandbox test (the tree is killed, nothing stored) and during its
 * commit (the saga restores the previous version). A rollback, a deletion and a schema migration each commit in one
 * transaction and are not cancellable (src/workflows/run-to-the-end.ts says why): cancelled at once or mid-step, they
 * end as they would have, and say so.
 *
 * A step is caught "in the middle" by making it wait: the sandbox test sleeps; on embedded PGlite a transaction the
 * test holds keeps the database's one session busy, so a step that needs it waits; on PostgreSQL (DATABASE_URL, as CI
 * sets it) another session holds a lock the migration's ALTER TABLE must wait for.
 */
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

let env: TestWorkflowEnvironment;
beforeAll(async () => {
  env = await startTemporal();
}, 120_000);
afterAll(async () => {
  await env?.teardown();
});

/** How a run ended, as its caller sees it: the result, or that it was cancelled (any other failure is rethrown). */
async function outcome<T>(result: Promise<T>): Promise<{ cancelled: true } | { cancelled: false; result: T }> {
  try {
    return { cancelled: false, result: await result };
  } catch (err) {
    if (err instanceof WorkflowFailedError && err.cause instanceof CancelledFailure) return { cancelled: true };
    throw err;
  }
}

/**
 * Holds the embedded database's one session in a transaction until the returned function is called: every step of
 * the worker that needs the database waits meanwhile, so a run can be caught in the middle of such a step.
 */
async function holdDatabase(database: ForgeDatabase): Promise<() => Promise<void>> {
  let release!: () => void;
  const released = new Promise<void>((r) => (release = r));
  let entered!: () => void;
  const inside = new Promise<void>((r) => (entered = r));
  const held = database.db.transaction(async () => {
    entered();
    await released;
  });
  await inside;
  return async () => {
    release();
    await held;
  };
}

/** Runs `during` while the database is held, releasing it whatever happens. */
async function whileHeld(database: ForgeDatabase, during: () => Promise<void>): Promise<void> {
  const release = await holdDatabase(database);
  try {
    await during();
  } finally {
    await release();
  }
}

describe('on PGlite', () => {
  let platform: TestPlatform;
  let sandbox: ReturnType<typeof watchSandboxRuns>;

  beforeAll(async () => {
    sandbox = watchSandboxRuns();
    platform = await startTestPlatform(env, 'pglite', { env: sandbox.platformEnv });
  }, 120_000);

  afterAll(async () => {
    await platform?.teardown();
    sandbox?.dispose();
  });

  const store = () => platform.workers.store;
  const handleOf = (workflowId: string): WorkflowHandle => env.client.workflow.getHandle(workflowId);
  const eventsOfRun = async (name: string, workflowId: string) =>
    (await store().listEvents({ subject: name }))
      .filter((e) => e.workflowId === workflowId)
      .reverse()
      .map((e) => ({ kind: e.kind, version: (e.detail as { version?: number }).version }));
  const versionsOf = async (name: string) => (await store().listVersions(name)).map((v) => v.version);
  const activeOf = async (name: string) => (await store().getActive(name))?.version;
  const expectDiskAgrees = () => expectDiskAgreesWithDatabase(store(), platform.config.agentToolsDir);

  async function deployTwice(name: string): Promise<void> {
    for (const variant of ['v1', 'v2']) {
      const result = await platform.forge.deployTool({ name, source: adderTool(variant, name), testInput: { a: 1, b: 2 } });
      expect(result.status).toBe('active');
    }
  }

  /**
   * Starts a run under a workflow ID the test knows (the client's rollback and delete IDs carry a random suffix), with
   * a short workflow task timeout as Forge's client sets: while a local step runs, the worker answers queries (the
   * test's `progress`) only when it heartbeats the task, at 80% of that timeout.
   */
  function startRun(workflow: string, workflowId: string, args: unknown[]) {
    return env.client.workflow.start(workflow, { taskQueue: platform.config.taskQueues.control, workflowId, args, workflowTaskTimeout: '2 seconds' });
  }
  const startToolRun = (workflow: 'rollbackToolWorkflow' | 'deleteToolWorkflow', workflowId: string, name: string) =>
    startRun(workflow, workflowId, [{ name }]);

  describe('deployment', () => {
    test('cancelled during its sandbox test: the tree is killed before the run ends, nothing stored, the previous version stays active', async () => {
      await platform.forge.deployTool({ name: 'cancel_test', source: adderTool('v1', 'cancel_test'), testInput: { a: 1, b: 2 } });
      const started = await platform.forge.startDeployTool({ name: 'cancel_test', source: slowTool('v2', 'cancel_test'), testInput: { ms: 20_000 } });
      const handle = handleOf(started.workflowId);
      await until(async () => (await stageOf(handle)) === 'test' && processesMarkedWith(sandbox.marker).length > 0, 20_000, 'the sandbox test to run');

      const cancelledAt = Date.now();
      await handle.cancel();
      expect(await outcome(started.result())).toEqual({ cancelled: true });
      // The run ends once the activity has heard of the cancellation (at its next heartbeat) and killed the tree.
      expect(Date.now() - cancelledAt).toBeLessThan(8_000);
      expect(processesMarkedWith(sandbox.marker)).toEqual([]);
      expect(await statusOf(handle)).toBe('CANCELLED');

      expect(await versionsOf('cancel_test')).toEqual([1]);
      expect(await activeOf('cancel_test')).toBe(1);
      expect(await eventsOfRun('cancel_test', started.workflowId)).toEqual([]);
      await expectDiskAgrees();
      expect(await sandbox.leftovers()).toEqual({ processes: [], runDirs: [] });
    }, 60_000);

    test('cancelled while its commit waits for the database: the commit lands, the saga restores the previous version, the run ends cancelled', async () => {
      await platform.forge.deployTool({ name: 'cancel_commit', source: adderTool('v1', 'cancel_commit'), testInput: { a: 1, b: 2 } });
      const started = await platform.forge.startDeployTool({ name: 'cancel_commit', source: slowTool('v2', 'cancel_commit'), testInput: { ms: 4_000 } });
      const handle = handleOf(started.workflowId);
      // The test runs in the workflow task, whose queries are answered at its heartbeats (every 1.6 s): a long test.
      await until(async () => (await stageOf(handle)) === 'test' && processesMarkedWith(sandbox.marker).length > 0, 20_000, 'the sandbox test to run');
      await whileHeld(platform.database, async () => {
        // The test has passed and its processes are gone: the commit, in the same step (testAndCommitHere), waits for
        // the database.
        await until(async () => processesMarkedWith(sandbox.marker).length === 0, 20_000, 'the sandbox test to end');
        await sleep(300); // the commit is in flight, waiting for the database
        await handle.cancel();
        await sleep(500);
      });

      expect(await outcome(started.result())).toEqual({ cancelled: true });
      expect(await statusOf(handle)).toBe('CANCELLED');
      // v2 was stored and activated by the commit, then the compensation made v1 active again: v2 stays as history.
      expect(await versionsOf('cancel_commit')).toEqual([1, 2]);
      expect(await activeOf('cancel_commit')).toBe(1);
      expect(await eventsOfRun('cancel_commit', started.workflowId)).toEqual([
        { kind: 'tool.version_created', version: 2 },
        { kind: 'tool.activated', version: 2 },
        { kind: 'tool.activated', version: 1 },
      ]);
      await until(async () => (await diskView(platform.config.agentToolsDir)).tools.cancel_commit?.version === 1, 5_000, 'agent-tools/ to show v1');
      await expectDiskAgrees();
    }, 60_000);
  });

  describe('migration (not cancellable: it ends as it would have, and says so)', () => {
    test('cancelled while it waits for the database: it runs to its end, and the result says applied', async () => {
      const name = 'cancel_migrate_held';
      const handle = handleOf(`schema-migrate/${name}`);
      let migrated!: Promise<unknown>;
      await whileHeld(platform.database, async () => {
        migrated = platform.forge.migrateSchema({ name, sql: 'CREATE TABLE agent_cancel_held (id int);' });
        migrated.catch(() => undefined); // awaited below
        await until(async () => (await stageOf(handle)) === 'validate', 20_000, 'the validate step to start');
        await sleep(300);
        await handle.cancel();
        await sleep(500);
      });
      await expect(migrated).resolves.toMatchObject({ status: 'applied', name, appliedBy: { workflowId: `schema-migrate/${name}` } });
      expect(await statusOf(handle)).toBe('COMPLETED');
      expect(await migrationRows(platform.database, name)).toHaveLength(1);
      expect(await relationExists(platform.database, 'agent_cancel_held')).toBe(true);
    }, 60_000);

    test('cancelled as early as a client can: applied once, and the result says so', async () => {
      for (let i = 0; i < 3; i++) {
        const name = `cancel_migrate_early_${i}`;
        const sqlText = `CREATE TABLE agent_cancel_early_${i} (id int);`;
        const handle = await startRun('migrateSchemaWorkflow', `schema-migrate/${name}`, [{ name, sql: sqlText, checksum: migrationChecksum(sqlText) }]);
        await handle.cancel();
        expect(await outcome(handle.result())).toEqual({ cancelled: false, result: expect.objectContaining({ status: 'applied', name }) });
        expect(await migrationRows(platform.database, name)).toHaveLength(1);
        expect(await relationExists(platform.database, `agent_cancel_early_${i}`)).toBe(true);
      }
    }, 60_000);
  });

  // A rollback or a deletion is one transaction of milliseconds: a cancel request cannot split it from its report, so
  // the run goes on to its end (src/workflows/run-to-the-end.ts says why a cancellable one could end "cancelled" with
  // the change committed).
  describe('rollback and delete (not cancellable: cancelled at once, or while the step waits, they finish and say so)', () => {
    test('rollback cancelled at once: rolled back once, and the result says so', async () => {
      await deployTwice('cancel_rollback');
      for (let i = 0; i < 3; i++) {
        const workflowId = `tool-rollback/cancel_rollback/early-${i}`;
        const handle = await startToolRun('rollbackToolWorkflow', workflowId, 'cancel_rollback');
        await handle.cancel();
        expect(await outcome(handle.result())).toEqual({
          cancelled: false,
          result: expect.objectContaining({ status: 'active', version: 1, previousVersion: 2 }),
        });
        expect(await activeOf('cancel_rollback')).toBe(1);
        expect(await eventsOfRun('cancel_rollback', workflowId)).toEqual([{ kind: 'tool.activated', version: 1 }]);
        await expectDiskAgrees();
        // Back to v2 for the next try.
        await expect(platform.forge.rollbackTool('cancel_rollback', { toVersion: 2 })).resolves.toMatchObject({ version: 2 });
      }
    }, 60_000);

    test('rollback cancelled while its step waits for the database: rolled back once, and the result says so', async () => {
      await deployTwice('cancel_rollback_held');
      const workflowId = 'tool-rollback/cancel_rollback_held/held';
      let handle!: WorkflowHandle;
      await whileHeld(platform.database, async () => {
        handle = await startToolRun('rollbackToolWorkflow', workflowId, 'cancel_rollback_held');
        await until(async () => (await stageOf(handle)) === 'activate', 20_000, 'the activate step to start');
        await sleep(300);
        await handle.cancel();
        await sleep(500);
      });
      expect(await outcome(handle.result())).toEqual({
        cancelled: false,
        result: expect.objectContaining({ status: 'active', version: 1, previousVersion: 2 }),
      });
      expect(await statusOf(handle)).toBe('COMPLETED');
      expect(await activeOf('cancel_rollback_held')).toBe(1);
      expect(await eventsOfRun('cancel_rollback_held', workflowId)).toEqual([{ kind: 'tool.activated', version: 1 }]);
      await expectDiskAgrees();
    }, 60_000);

    test('delete cancelled at once: deleted, and the result says so', async () => {
      for (let i = 0; i < 3; i++) {
        const name = `cancel_delete_${i}`;
        await deployTwice(name);
        const workflowId = `tool-delete/${name}/early`;
        const handle = await startToolRun('deleteToolWorkflow', workflowId, name);
        await handle.cancel();
        expect(await outcome(handle.result())).toEqual({
          cancelled: false,
          result: expect.objectContaining({ status: 'deleted', previousVersion: 2, removedVersions: 2 }),
        });
        expect(await versionsOf(name)).toEqual([]);
        expect(await activeOf(name)).toBeUndefined();
        expect(await eventsOfRun(name, workflowId)).toEqual([{ kind: 'tool.removed', version: undefined }]);
        await expectDiskAgrees();
      }
    }, 60_000);

    test('delete cancelled while its step waits for the database: deleted, and the result says so', async () => {
      await deployTwice('cancel_delete_held');
      const workflowId = 'tool-delete/cancel_delete_held/held';
      let handle!: WorkflowHandle;
      await whileHeld(platform.database, async () => {
        handle = await startToolRun('deleteToolWorkflow', workflowId, 'cancel_delete_held');
        await until(async () => (await stageOf(handle)) === 'remove', 20_000, 'the remove step to start');
        await sleep(300);
        await handle.cancel();
        await sleep(500);
      });
      expect(await outcome(handle.result())).toEqual({
        cancelled: false,
        result: expect.objectContaining({ status: 'deleted', previousVersion: 2, removedVersions: 2 }),
      });
      expect(await statusOf(handle)).toBe('COMPLETED');
      expect(await versionsOf('cancel_delete_held')).toEqual([]);
      expect(await activeOf('cancel_delete_held')).toBeUndefined();
      await expectDiskAgrees();
      expect((await diskView(platform.config.agentToolsDir)).tools.cancel_delete_held).toBeUndefined();
    }, 60_000);
  });
});

const url = process.env.DATABASE_URL;

// PostgreSQL where DATABASE_URL is set (CI sets it): only a server with more than one session can have a migration
// wait on a lock another session holds. The server is shared with the suites running beside this one, so this uses a
// throwaway database on it and never stops it.
describeIf(url, 'DATABASE_URL is not set (PostgreSQL only; CI sets it)')('on PostgreSQL: a migration cancelled while it waits on a lock', () => {
  let platform: TestPlatform;
  let backend: TestBackend;
  let holder: ForgeDatabase;

  beforeAll(async () => {
    backend = postgresBackend(url!);
    // A lock not granted is waited out by the run (round three) within FORGE_MIGRATION_LOCK_WAIT_MS: 1.5 s here, so
    // the run tries twice (4 s each, 1 s apart) and then says failed.
    platform = await startTestPlatform(env, 'postgres', {
      backend,
      env: { FORGE_MIGRATION_LOCK_TIMEOUT_MS: '4000', FORGE_MIGRATION_LOCK_WAIT_MS: '1500' },
    });
    holder = await backend.open();
  }, 120_000);

  afterAll(async () => {
    await holder?.close();
    await platform?.teardown();
  });

  /** Holds a lock on `table` from another session; resolves once it is held. */
  async function lockTable(table: string): Promise<{ release(): Promise<void> }> {
    let release!: () => void;
    const released = new Promise<void>((r) => (release = r));
    let locked!: () => void;
    const isLocked = new Promise<void>((r) => (locked = r));
    const holding = holder.db.transaction(async (tx) => {
      await tx.execute(sql.raw(`LOCK TABLE ${table} IN ACCESS SHARE MODE`));
      locked();
      await released;
    });
    await Promise.race([isLocked, holding]);
    return {
      async release() {
        release();
        await holding;
      },
    };
  }

  /** Starts the migration and resolves once its ALTER TABLE waits in PostgreSQL for the lock on `table`. */
  async function startWaitingOnLock(name: string, table: string) {
    const migrated = platform.forge.migrateSchema({ name, sql: `ALTER TABLE ${table} ADD COLUMN note text;` });
    migrated.catch(() => undefined); // awaited by the caller
    await until(
      async () => {
        const waiting = (await holder.db.execute(
          sql.raw(`SELECT 1 FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE 'ALTER TABLE ${table}%'`),
        )) as unknown as { rows: unknown[] };
        return waiting.rows.length === 1;
      },
      10_000,
      "the migration's ALTER TABLE to wait on the lock",
    );
    return { migrated }; // wrapped: an async function returning the promise itself would wait for it
  }

  test('the lock outlasts lock_timeout: the run says failed and rolled back, and nothing of it remains', async () => {
    await expect(platform.forge.migrateSchema({ name: 'cancel_lock_base', sql: 'CREATE TABLE agent_cancel_lock (id int);' })).resolves.toMatchObject({
      status: 'applied',
    });
    const name = 'cancel_lock_add';
    const lock = await lockTable('agent_cancel_lock');
    try {
      const { migrated } = await startWaitingOnLock(name, 'agent_cancel_lock');
      await env.client.workflow.getHandle(`schema-migrate/${name}`).cancel();
      // The run goes on: its step gives up at lock_timeout and rolls back, tries once more after a second, and past its
      // lock-wait budget reports the verdict, naming the session that holds the lock.
      const result = await migrated;
      expect(result).toMatchObject({ status: 'failed', name, error: { code: '55P03' } });
      expect(result.message).toMatch(/rolled back/);
      expect(result.error?.blockedBy?.length).toBeGreaterThan(0);
    } finally {
      await lock.release();
    }
    expect(await migrationRows(platform.database, name)).toHaveLength(0);
    expect(await columnExists(platform.database, 'agent_cancel_lock', 'note')).toBe(false);
  }, 60_000);

  test('the lock is released after the cancel: the migration is applied once, and the result says so', async () => {
    await expect(platform.forge.migrateSchema({ name: 'cancel_lock_base2', sql: 'CREATE TABLE agent_cancel_lock2 (id int);' })).resolves.toMatchObject({
      status: 'applied',
    });
    const name = 'cancel_lock_add2';
    const lock = await lockTable('agent_cancel_lock2');
    let migrated!: Promise<MigrateSchemaResult>;
    try {
      ({ migrated } = await startWaitingOnLock(name, 'agent_cancel_lock2'));
      await env.client.workflow.getHandle(`schema-migrate/${name}`).cancel();
      await sleep(500);
    } finally {
      await lock.release();
    }
    expect(await migrated).toMatchObject({ status: 'applied', name });
    expect(await migrationRows(platform.database, name)).toHaveLength(1);
    expect(await columnExists(platform.database, 'agent_cancel_lock2', 'note')).toBe(true);
  }, 60_000);
});
