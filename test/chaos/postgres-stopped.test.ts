import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { Client } from 'pg';
import { openPostgres } from '../../src/db/postgres';
import type { TestBackend } from '../db/backends';
import { startTemporal, startTestPlatform, type TestPlatform } from '../helpers/platform';
import { columnExists, migrationRows, query } from '../migrate/helpers';
import { expectDiskAgreesWithDatabase, sleep, stageOf, statusOf, until, watchSandboxRuns } from './end-state';
import { postgresBinDir, PrivatePostgres } from './private-postgres';
import { describeIf } from '../helpers/skip';

/**
 * Issue 9, "PostgreSQL stopped for 20 s in the middle of a migration and of a deployment": the run waits and finishes
 * once the server is back. The server is a real one that really stops (`pg_ctl stop -m fast`: every session is
 * terminated, open transactions roll back, the port refuses connections) and starts again on the same port: a private
 * cluster of this file, from the same Debian binaries as the server CI starts, because the shared server at
 * DATABASE_URL serves the suites that jest runs beside this one (test/migrate/database-outage.test.ts shows the same
 * waiting through a TCP proxy that it cuts).
 *
 * Both runs are genuinely in flight when the server stops: the deployment in its sandbox test (which needs no
 * database, so its commit is what has to wait), and the migration inside its apply transaction, blocked on a lock
 * that another session holds on the table it alters (lock_timeout raised for this platform, so the apply waits rather
 * than fail). The stop ends that transaction and the lock holder's; the step is retried until the server is back,
 * and then commits once.
 */
const OUTAGE_MS = 20_000;

const bin = postgresBinDir();

const slowTool = `import { z } from 'zod';
export default {
  name: 'outage_slow',
  description: 'Its test takes a few seconds.',
  inputSchema: z.object({ ms: z.number() }),
  timeoutMs: 20_000,
  async execute({ ms }: { ms: number }) {
    await new Promise((r) => setTimeout(r, ms));
    return { waited: ms };
  },
};
`;

// Skipped only where the Debian server binaries are absent (a machine without the postgresql package): there is no
// server to stop. CI installs them (.ci/run), so there this always runs.
describeIf(bin, 'no PostgreSQL server binaries here (Debian package postgresql; CI installs them)')(
  'PostgreSQL stopped for 20 s mid-run (a private cluster, really stopped)',
  () => {
    let env: TestWorkflowEnvironment;
    let pg: PrivatePostgres;
    let platform: TestPlatform;
    let sandbox: ReturnType<typeof watchSandboxRuns>;

    beforeAll(async () => {
      sandbox = watchSandboxRuns();
      [env, pg] = await Promise.all([startTemporal(), PrivatePostgres.start(bin)]);
      // The whole cluster is this file's: Forge uses its `forge` database directly.
      const backend: TestBackend = { kind: 'postgres', open: (schema = 'public') => openPostgres(pg.url, schema), dispose: async () => undefined };
      platform = await startTestPlatform(env, 'postgres', {
        backend,
        // The apply waits on the lock through the outage instead of failing at the default 5 s lock_timeout.
        env: { FORGE_MIGRATION_LOCK_TIMEOUT_MS: '120000', ...sandbox.platformEnv },
      });
    }, 120_000);

    afterAll(async () => {
      await platform?.teardown();
      await pg?.dispose();
      await env?.teardown();
      sandbox?.dispose();
    });

    test('a migration waiting on a lock and a deployment in its sandbox test both wait, then finish once, when it is back', async () => {
      const created = await platform.forge.migrateSchema({ name: 'outage_notes', sql: 'CREATE TABLE agent_outage_notes (id int PRIMARY KEY);' });
      expect(created.status).toBe('applied');

      // Another session holds a lock on the table that ALTER TABLE must wait for.
      const lockUrl = new URL(pg.superuserUrl);
      lockUrl.pathname = '/forge';
      const holder = new Client({ connectionString: lockUrl.toString() });
      holder.on('error', () => undefined); // the stop terminates this session
      await holder.connect();
      await holder.query('BEGIN');
      await holder.query('LOCK TABLE agent_outage_notes IN ACCESS SHARE MODE');

      // The test begins beside the type check (cold on a new platform: seconds), so it outlasts the check and the
      // wait for the migration's lock below, and ends during the outage.
      const deploy = await platform.forge.startDeployTool({ name: 'outage_slow', source: slowTool, testInput: { ms: 12_000 } });
      const deployHandle = env.client.workflow.getHandle(deploy.workflowId);
      await until(async () => (await stageOf(deployHandle)) === 'test', 20_000, 'the deployment to reach its sandbox test');

      const migration = platform.forge.migrateSchema({ name: 'outage_add_note', sql: 'ALTER TABLE agent_outage_notes ADD COLUMN note text;' });
      migration.catch(() => undefined); // awaited below
      const observer = new Client({ connectionString: lockUrl.toString() });
      await observer.connect();
      try {
        // The apply transaction is in PostgreSQL, its ALTER TABLE waiting for the holder's lock.
        await until(
          async () =>
            (await observer.query(`SELECT 1 FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE 'ALTER TABLE agent_outage_notes%'`))
              .rowCount === 1,
          20_000,
          "the migration's ALTER TABLE to wait on the lock",
        );
      } finally {
        await observer.end();
      }
      expect(await stageOf(deployHandle)).toBe('test');

      await pg.stopServer();
      const stoppedAt = Date.now();
      await sleep(OUTAGE_MS / 2);
      // Mid-outage: the sandbox test has ended (it needs no database), and the commit is what waits.
      expect(await statusOf(deployHandle)).toBe('RUNNING');
      expect(await stageOf(deployHandle)).toBe('commit');
      const migrationHandle = env.client.workflow.getHandle('schema-migrate/outage_add_note');
      expect(await statusOf(migrationHandle)).toBe('RUNNING');
      expect(await stageOf(migrationHandle)).toBe('apply');
      await sleep(OUTAGE_MS - (Date.now() - stoppedAt));
      expect(await statusOf(deployHandle)).toBe('RUNNING');
      expect(await statusOf(migrationHandle)).toBe('RUNNING');
      await holder.end().catch(() => undefined);

      await pg.startServer();
      const [deployed, migrated] = await Promise.all([deploy.result(), migration]);

      expect(migrated).toMatchObject({ status: 'applied', name: 'outage_add_note', appliedBy: { workflowId: 'schema-migrate/outage_add_note' } });
      expect(await migrationRows(platform.database, 'outage_add_note')).toHaveLength(1);
      expect(await columnExists(platform.database, 'agent_outage_notes', 'note')).toBe(true);
      const appliedEvents = await query(platform.database, `SELECT 1 FROM events WHERE kind = 'migration.applied' AND subject = 'outage_add_note'`);
      expect(appliedEvents).toHaveLength(1);

      expect(deployed).toMatchObject({ status: 'active', name: 'outage_slow', version: 1 });
      const store = platform.workers.store;
      expect((await store.listVersions('outage_slow')).map((v) => v.version)).toEqual([1]);
      expect(await store.getActive('outage_slow')).toMatchObject({ version: 1 });
      expect((await store.listEvents({ subject: 'outage_slow' })).filter((e) => e.kind === 'tool.activated')).toHaveLength(1);
      await expectDiskAgreesWithDatabase(store, platform.config.agentToolsDir);
      expect(await sandbox.leftovers()).toEqual({ processes: [], runDirs: [] });
    }, 120_000);
  },
);
