import type { Pool } from 'pg';
import { applyAgentMigration, MigrationStatementError, type ForgeDatabase } from '../../src/db';
import { AGENT_ROLE } from '../../src/db/agent-role';
import { migrationChecksum } from '../../src/policy';
import { backendKinds, postgresBackend, type TestBackend } from '../db/backends';
import { query } from './helpers';
import { describeIf } from '../helpers/skip';

/**
 * SCHEMA_POLICY.md "How it runs", tested beneath the policy: these statements are handed to the apply step directly,
 * as if the judge had let them through, to show what the database and the session give as a second wall.
 */
let counter = 0;
function apply(database: ForgeDatabase, statements: string[], statementTimeoutMs = 10_000) {
  const sql = statements.join(';\n');
  let offset = 0;
  return applyAgentMigration(
    database,
    {
      name: `wall-${++counter}`,
      checksum: migrationChecksum(sql),
      sql,
      statements: statements.map((text) => {
        const s = { text, offset };
        offset += text.length + 2;
        return s;
      }),
      runId: `run-${counter}`,
    },
    { lockTimeoutMs: 2_000, statementTimeoutMs },
  );
}

async function refusal(work: Promise<unknown>): Promise<MigrationStatementError> {
  const err = await work.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(MigrationStatementError);
  return err as MigrationStatementError;
}

describe.each(backendKinds())('the apply step on $kind', ({ kind, make }) => {
  let backend: TestBackend;
  let database: ForgeDatabase;
  beforeAll(async () => {
    backend = make();
    database = await backend.open();
  });
  afterAll(async () => {
    await database?.close();
    await backend?.dispose();
  });

  test('nothing a migration set in its session outlives it: settings, advisory locks, prepared statements', async () => {
    const before = await query<{ search_path: string; ro: string }>(
      database,
      "SELECT current_setting('search_path') AS search_path, current_setting('default_transaction_read_only') AS ro",
    );
    await apply(database, [
      'CREATE TABLE agent_wall_ok (id int)',
      "SELECT set_config('search_path', 'pg_temp', false)",
      "SELECT set_config('default_transaction_read_only', 'on', false)",
      'SELECT pg_advisory_lock(4242)',
      'PREPARE agent_leftover AS SELECT 1',
    ]);
    // Many queries, so that on PostgreSQL every connection of the pool is seen.
    for (let i = 0; i < 12; i++) {
      const after = await query<{ search_path: string; ro: string }>(
        database,
        "SELECT current_setting('search_path') AS search_path, current_setting('default_transaction_read_only') AS ro",
      );
      expect(after).toEqual(before);
    }
    // This database's only: pg_locks shows the whole cluster, where another suite's online index build holds one.
    const locks = await query(
      database,
      "SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND database = (SELECT oid FROM pg_database WHERE datname = current_database())",
    );
    expect(locks).toHaveLength(0);
    expect(await query(database, "SELECT 1 FROM pg_prepared_statements WHERE name = 'agent_leftover'")).toHaveLength(0);
    // The migration committed, its tracking row too (written after the statements, under Forge's own settings).
    expect(await query(database, "SELECT to_regclass('agent_wall_ok') IS NOT NULL AS ok")).toEqual([{ ok: true }]);
  });

  test('the statement timeout is the deadline of the whole migration, not of each statement', async () => {
    const started = Date.now();
    const err = await refusal(
      apply(database, ['SELECT pg_sleep(0.6)', 'CREATE TABLE agent_slow (id int)', 'SELECT pg_sleep(0.6)', 'SELECT pg_sleep(0.6)'], 1_000),
    );
    expect(err.details).toMatchObject({ code: '57014' });
    // Each statement alone is under the timeout: only the deadline stops the third one.
    expect(err.details.statementIndex).toBe(2);
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(await query(database, "SELECT to_regclass('agent_slow') IS NULL AS gone")).toEqual([{ gone: true }]);
  });

  if (kind === 'postgres') {
    test("Forge's own row is written under the timeouts again, whatever the statements set", async () => {
      const pool = (database.db as unknown as { $client: Pool }).$client;
      const holder = await pool.connect();
      try {
        // Reads of the tracking table go on; Forge's insert of its row waits on this lock.
        await holder.query('BEGIN');
        await holder.query('LOCK TABLE forge_migrations IN SHARE MODE');
        const started = Date.now();
        const err = await refusal(apply(database, ["SELECT set_config('lock_timeout', '0', true)", 'CREATE TABLE agent_wall_row (id int)']));
        expect(err.details.code).toBe('55P03');
        expect(Date.now() - started).toBeLessThan(5_000);
      } finally {
        await holder.query('ROLLBACK');
        holder.release();
      }
      expect(await query(database, "SELECT to_regclass('agent_wall_row') IS NULL AS gone")).toEqual([{ gone: true }]);
    });

    test('the role the statements run as cannot read or write server files', async () => {
      for (const statement of [
        "SELECT pg_read_file('/etc/hostname')",
        "SELECT pg_ls_dir('.')",
        "SELECT lo_export(lo_from_bytea(0, 'x'), '/tmp/forge-wall-test')",
        "SELECT lo_import('/etc/hostname')",
        "COPY (SELECT 1) TO '/tmp/forge-wall-test'",
      ]) {
        const err = await refusal(apply(database, [statement]));
        expect(err.details.code).toBe('42501');
      }
    });
  }
});

/**
 * When Forge connects as a superuser, it creates forge_agent and runs the agent's statements under it. Needs a
 * superuser's URL: .ci/run sets DATABASE_SUPERUSER_URL; elsewhere the suite is skipped (a superuser cannot be made
 * from an ordinary role).
 */
const superuserUrl = process.env.DATABASE_SUPERUSER_URL;
describeIf(superuserUrl, 'DATABASE_SUPERUSER_URL is not set (a superuser connection; CI sets it)')('the apply step as a superuser', () => {
  let backend: TestBackend;
  let database: ForgeDatabase;
  beforeAll(async () => {
    backend = postgresBackend(superuserUrl as string);
    database = await backend.open();
  });
  afterAll(async () => {
    await database?.close();
    await backend?.dispose();
  });

  test(`runs the statements as ${AGENT_ROLE}, which owns what it creates and holds no privileged role`, async () => {
    await apply(database, ['CREATE TABLE agent_whoami AS SELECT current_user::text AS u']);
    expect(await query(database, 'SELECT u FROM agent_whoami')).toEqual([{ u: AGENT_ROLE }]);
    const [owner] = await query<{ o: string }>(database, "SELECT tableowner AS o FROM pg_tables WHERE tablename = 'agent_whoami'");
    expect(owner.o).toBe(AGENT_ROLE);
    // Forge's own row is written as Forge (forge_agent has no right on Forge's tables), after the agent's statements.
    expect(await query(database, "SELECT has_table_privilege('forge_agent', 'forge_migrations', 'INSERT') AS may")).toEqual([{ may: false }]);
    const err = await refusal(apply(database, ["SELECT pg_read_file('/etc/hostname')"]));
    expect(err.details.code).toBe('42501');
    const signal = await refusal(apply(database, ['SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE pid <> pg_backend_pid()']));
    expect(signal.details.code).toBe('42501');
  });
});
