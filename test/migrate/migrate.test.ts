import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Pool } from 'pg';
import { main } from '../../src/cli';
import { ForgeInputError } from '../../src/client';
import { ExitCode } from '../../src/commands/exit-codes';
import { migrationChecksum } from '../../src/policy';
import { databaseKinds, startTestPlatform, useTemporal, type TestPlatform } from '../helpers/platform';
import { adderTool } from '../helpers/tools';
import { columnExists, migrationRows, query, relationExists } from './helpers';

/** Low bounds, so a test sees them act in about a second. Ordinary DDL here takes milliseconds. */
const LOCK_TIMEOUT_MS = 500;
const STATEMENT_TIMEOUT_MS = 1000;
/** How long a run waits out a lock not granted (round three) before it fails: one retry after 1 s. */
const LOCK_WAIT_MS = 1500;

const temporal = useTemporal();

/** Runs the real `forge` CLI in-process against the platform, capturing stdout. */
async function cli(platform: TestPlatform, args: string[]): Promise<{ code: number; stdout: string }> {
  const saved = { ...process.env };
  Object.assign(process.env, platform.childEnv);
  let stdout = '';
  const out = jest.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
    stdout += chunk.toString();
    return true;
  });
  const err = jest.spyOn(process.stderr, 'write').mockImplementation(() => true);
  try {
    const code = await main(['node', 'forge', ...args]);
    return { code, stdout };
  } finally {
    out.mockRestore();
    err.mockRestore();
    process.env = saved;
  }
}

describe.each(databaseKinds())('schema migration on %s', (kind) => {
  let platform: TestPlatform;
  let dir: string;
  beforeAll(async () => {
    platform = await startTestPlatform(temporal(), kind, {
      env: {
        FORGE_MIGRATION_LOCK_TIMEOUT_MS: String(LOCK_TIMEOUT_MS),
        FORGE_MIGRATION_STATEMENT_TIMEOUT_MS: String(STATEMENT_TIMEOUT_MS),
        FORGE_MIGRATION_LOCK_WAIT_MS: String(LOCK_WAIT_MS),
      },
    });
    dir = mkdtempSync(path.join(tmpdir(), 'forge-migrate-test-'));
  }, 120_000);
  afterAll(async () => {
    await platform?.teardown();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  test('applied: the table and the row are there; again is alreadyApplied; other SQL under the name is rejected', async () => {
    const sql = `-- notes the agent keeps
CREATE TABLE agent_notes (id bigserial PRIMARY KEY, body text NOT NULL, created_at timestamptz NOT NULL DEFAULT now());
CREATE INDEX agent_notes_created_idx ON agent_notes (created_at);
`;
    const result = await platform.forge.migrateSchema({ name: '0001_notes', sql });
    expect(result).toMatchObject({
      status: 'applied',
      name: '0001_notes',
      checksum: migrationChecksum(sql),
      workflowId: 'schema-migrate/0001_notes',
    });
    expect(result.stages.map((s) => [s.name, s.status])).toEqual([
      ['validate', 'done'],
      ['apply', 'done'],
      ['build', 'skipped'],
      ['record', 'done'],
    ]);
    expect(result.statements?.map((s) => s.kind)).toEqual(['CreateStmt', 'IndexStmt']);
    expect(await relationExists(platform.database, 'agent_notes')).toBe(true);
    expect(await relationExists(platform.database, 'agent_notes_created_idx')).toBe(true);
    const [row] = await migrationRows(platform.database, '0001_notes');
    expect(row).toMatchObject({ name: '0001_notes', checksum: migrationChecksum(sql), sql, workflow_id: 'schema-migrate/0001_notes' });
    expect(row.run_id).toEqual(result.appliedBy?.runId);
    const applied = await query(platform.database, `SELECT * FROM events WHERE kind = 'migration.applied' AND subject = '0001_notes'`);
    expect(applied).toHaveLength(1);

    const again = await platform.forge.migrateSchema({ name: '0001_notes', sql });
    expect(again).toMatchObject({ status: 'alreadyApplied', appliedAt: result.appliedAt, appliedBy: result.appliedBy });
    expect(again.stages.map((s) => s.status)).toEqual(['done', 'skipped', 'skipped', 'skipped']);
    expect(await migrationRows(platform.database, '0001_notes')).toHaveLength(1);

    const other = `${sql}CREATE TABLE agent_other (id int);`;
    const mismatch = await platform.forge.migrateSchema({ name: '0001_notes', sql: other });
    expect(mismatch).toMatchObject({
      status: 'rejected',
      reason: 'checksum-mismatch',
      checksum: migrationChecksum(other),
      existingChecksum: migrationChecksum(sql),
    });
    expect(mismatch.message).toMatch(/different SQL.*new migration under a new name/);
    expect(await relationExists(platform.database, 'agent_other')).toBe(false);

    const list = await platform.forge.listMigrations();
    expect(list.migrations).toContainEqual(
      expect.objectContaining({ name: '0001_notes', checksum: migrationChecksum(sql), workflowId: 'schema-migrate/0001_notes', appliedAt: result.appliedAt }),
    );
    const run = await platform.forge.getRun('schema-migrate/0001_notes');
    expect(run).toMatchObject({ kind: 'migrate', subject: '0001_notes', outcome: 'rejected', type: 'migrateSchemaWorkflow' });
  });

  test('a policy rejection names each statement, and nothing of the migration runs', async () => {
    const sql = 'CREATE TABLE agent_kept (id int);\nDROP TABLE tool_versions;\n';
    const result = await platform.forge.migrateSchema({ name: 'drop_core', sql });
    expect(result).toMatchObject({ status: 'rejected', reason: 'policy' });
    expect(result.statements).toEqual([
      expect.objectContaining({ index: 0, kind: 'CreateStmt', accepted: true }),
      expect.objectContaining({ index: 1, kind: 'DropStmt', accepted: false, rule: 'drop-forbidden', location: expect.objectContaining({ line: 2 }) }),
    ]);
    expect(result.message).toMatch(/1 of 2 statement\(s\) refused/);
    expect(result.stages[0]).toMatchObject({ name: 'validate', status: 'failed' });
    expect(await relationExists(platform.database, 'agent_kept')).toBe(false);
    expect(await relationExists(platform.database, 'tool_versions')).toBe(true);
    expect(await migrationRows(platform.database, 'drop_core')).toHaveLength(0);
  });

  test('a SQL error is failed with PostgreSQL code and position, and rolls back the statements before it', async () => {
    const sql = 'CREATE TABLE agent_half (id int);\nALTER TABLE agent_half ADD COLUMN v nope_type;\n';
    const result = await platform.forge.migrateSchema({ name: 'half', sql });
    expect(result).toMatchObject({
      status: 'failed',
      error: { code: '42704', statementIndex: 1, line: 2, column: 37, position: sql.indexOf('nope_type') + 1, enforcedBy: 'postgres' },
    });
    expect(result.error?.message).toMatch(/type "nope_type" does not exist/);
    expect(result.stages.map((s) => [s.name, s.status])).toEqual([
      ['validate', 'done'],
      ['apply', 'failed'],
      ['build', 'skipped'],
      ['record', 'skipped'],
    ]);
    expect(await relationExists(platform.database, 'agent_half')).toBe(false);
    expect(await migrationRows(platform.database, 'half')).toHaveLength(0);

    // Nothing was recorded, so the corrected migration may take the same name.
    const fixed = await platform.forge.migrateSchema({ name: 'half', sql: sql.replace('nope_type', 'text') });
    expect(fixed.status).toBe('applied');
    expect(await columnExists(platform.database, 'agent_half', 'v')).toBe(true);
  });

  test('a statement that runs past statement_timeout is cancelled at the bound and rolled back; the database keeps serving', async () => {
    // Committed before the cancellations, and checked after them.
    const before = await platform.forge.migrateSchema({ name: 'kept_before_slow', sql: 'CREATE TABLE agent_kept (id int PRIMARY KEY, note text NOT NULL);' });
    expect(before.status).toBe('applied');
    await query(platform.database, `INSERT INTO agent_kept SELECT g, md5(g::text) FROM generate_series(1, 1000) g`);
    const kept = `SELECT count(*)::int AS n, md5(string_agg(note, ',' ORDER BY id)) AS digest FROM agent_kept`;
    const keptBefore = await query(platform.database, kept);
    // Setup through the test's own connection: a table to rewrite (CREATE TABLE AS is not for migrations). No
    // autovacuum on it: an autovacuum worker busy on it at teardown keeps DROP DATABASE ... WITH (FORCE) from
    // terminating it without superuser rights.
    await query(platform.database, `CREATE TABLE agent_big WITH (autovacuum_enabled = false) AS SELECT g AS id FROM generate_series(1, 300000) g`);
    // Allowed by the policy, and slow: a volatile default makes the database rewrite every row, here hashing ~20 kB
    // each. Left alone it runs ~13 s on PostgreSQL and ~19 s on PGlite (measured), against a 1 s bound.
    const sql = 'CREATE TABLE agent_slow_side (id int);\nALTER TABLE agent_big ADD COLUMN agent_tag text DEFAULT md5(repeat(random()::text, 1500));\n';
    // Several times over: on PGlite each one ends the database's thread and reopens the data directory.
    for (let round = 0; round < 3; round++) {
      const started = Date.now();
      const result = await platform.forge.migrateSchema({ name: `slow_rewrite_${round}`, sql });
      const elapsed = Date.now() - started;
      expect(result).toMatchObject({
        status: 'failed',
        error: { code: '57014', statementIndex: 1, line: 2, column: 1, enforcedBy: kind === 'postgres' ? 'postgres' : 'forge' },
      });
      // Cut off at the bound, far below the statement's natural run time.
      expect(elapsed).toBeGreaterThanOrEqual(STATEMENT_TIMEOUT_MS);
      expect(elapsed).toBeLessThan(STATEMENT_TIMEOUT_MS + 3_000);
      if (kind === 'pglite') {
        // PGlite ignores statement_timeout: Forge ended the thread running it and reopened the database.
        expect(result.error?.message).toMatch(/passed the 1000 ms statement_timeout of the whole migration.*cancelled at its \d+ ms bound.*rolled back/);
        expect(result.message).toMatch(/^Forge cancelled the migration in statement 1/);
      } else {
        expect(result.message).toMatch(/^PostgreSQL refused the migration in statement 1/);
      }
      expect(await relationExists(platform.database, 'agent_slow_side')).toBe(false);
      expect(await columnExists(platform.database, 'agent_big', 'agent_tag')).toBe(false);
      expect(await migrationRows(platform.database, `slow_rewrite_${round}`)).toHaveLength(0);

      // The database keeps serving: a migration and a tool deployment right after.
      const next = await platform.forge.migrateSchema({ name: `after_slow_${round}`, sql: `CREATE TABLE agent_after_slow_${round} (id int);` });
      expect(next.status).toBe('applied');
      expect(await relationExists(platform.database, `agent_after_slow_${round}`)).toBe(true);
      const tool = await platform.forge.deployTool({
        name: `after_slow_${round}`,
        source: adderTool(String(round), `after_slow_${round}`),
        testInput: { a: 1, b: 2 },
      });
      expect(tool).toMatchObject({ status: 'active', version: 1 });
    }
    expect(await query(platform.database, kept)).toEqual(keptBefore);
    expect(keptBefore).toEqual([expect.objectContaining({ n: 1000 })]);
    expect(await migrationRows(platform.database, 'kept_before_slow')).toHaveLength(1);
    await query(platform.database, 'DROP TABLE agent_big');
  }, 180_000);

  test('two migrations of one name at once: one applies, the other SQL is rejected; the same SQL joins', async () => {
    const a = 'CREATE TABLE agent_race_a (id int);';
    const b = 'CREATE TABLE agent_race_b (id int);';
    const [ra, rb] = await Promise.all([platform.forge.migrateSchema({ name: 'race', sql: a }), platform.forge.migrateSchema({ name: 'race', sql: b })]);
    const statuses = [ra.status, rb.status].sort();
    expect(statuses).toEqual(['applied', 'rejected']);
    const winner = ra.status === 'applied' ? 'agent_race_a' : 'agent_race_b';
    const loser = winner === 'agent_race_a' ? 'agent_race_b' : 'agent_race_a';
    expect(await relationExists(platform.database, winner)).toBe(true);
    expect(await relationExists(platform.database, loser)).toBe(false);
    expect(await migrationRows(platform.database, 'race')).toHaveLength(1);

    const same = 'CREATE TABLE agent_twin (id int);';
    const twins = await Promise.all([1, 2, 3].map(() => platform.forge.migrateSchema({ name: 'twin', sql: same })));
    expect(twins.filter((r) => r.status === 'applied').length).toBeGreaterThanOrEqual(1);
    expect(twins.every((r) => r.status === 'applied' || r.status === 'alreadyApplied')).toBe(true);
    expect(await migrationRows(platform.database, 'twin')).toHaveLength(1);
  });

  test('invalid input is refused by the client before anything starts', async () => {
    for (const input of [
      { name: 'bad/name', sql: 'CREATE TABLE agent_x (id int);' },
      { name: '', sql: 'CREATE TABLE agent_x (id int);' },
      { name: 'empty', sql: '  \n' },
    ]) {
      await expect(platform.forge.migrateSchema(input)).rejects.toBeInstanceOf(ForgeInputError);
    }
    const started: string[] = [];
    for await (const run of temporal().client.workflow.list({ query: `WorkflowId = 'schema-migrate/empty'` })) started.push(run.workflowId);
    expect(started).toEqual([]);
  });

  test('forge migrate and forge migrations print CLI.md JSON and exit 0 / 1 / 2', async () => {
    const file = path.join(dir, 'cli.sql');
    writeFileSync(file, 'CREATE TABLE agent_cli (id int);\n');
    const applied = await cli(platform, ['migrate', '--name', 'cli_one', file, '--json']);
    expect(applied.code).toBe(ExitCode.ok);
    expect(applied.stdout.trim().split('\n')).toHaveLength(1);
    expect(JSON.parse(applied.stdout)).toMatchObject({
      status: 'applied',
      name: 'cli_one',
      workflowId: 'schema-migrate/cli_one',
      checksum: expect.stringMatching(/^[0-9a-f]{64}$/),
    });

    const again = await cli(platform, ['migrate', '--name', 'cli_one', file, '--json']);
    expect(again.code).toBe(ExitCode.ok);
    expect(JSON.parse(again.stdout).status).toBe('alreadyApplied');

    const bad = path.join(dir, 'bad.sql');
    writeFileSync(bad, 'TRUNCATE tool_versions;\n');
    const rejected = await cli(platform, ['migrate', '--name', 'cli_bad', bad, '--json']);
    expect(rejected.code).toBe(ExitCode.refused);
    expect(JSON.parse(rejected.stdout)).toMatchObject({ status: 'rejected', statements: [expect.objectContaining({ accepted: false })] });

    const broken = path.join(dir, 'broken.sql');
    writeFileSync(broken, 'CREATE TABLE agent_cli_broken (v nope_type);\n');
    const failed = await cli(platform, ['migrate', '--name', 'cli_broken', broken, '--json']);
    expect(failed.code).toBe(ExitCode.refused);
    expect(JSON.parse(failed.stdout)).toMatchObject({ status: 'failed', error: { code: '42704' } });

    expect((await cli(platform, ['migrate', file, '--json'])).code).toBe(ExitCode.usage); // no --name
    expect((await cli(platform, ['migrate', '--name', 'x', path.join(dir, 'missing.sql'), '--json'])).code).toBe(ExitCode.usage);

    const list = await cli(platform, ['migrations', '--json']);
    expect(list.code).toBe(ExitCode.ok);
    const listed = JSON.parse(list.stdout) as { migrations: { name: string }[] };
    expect(listed.migrations.map((m) => m.name)).toContain('cli_one');
    expect(listed.migrations.map((m) => m.name)).not.toContain('cli_bad');
    expect(Object.keys(listed.migrations[0]).sort()).toEqual(expect.arrayContaining(['appliedAt', 'checksum', 'name', 'workflowId']));
  });

  if (kind === 'postgres') {
    test('a core table locked by live traffic: the run retries at lock_timeout (55P03), never queues, and fails past its wait budget naming the holder', async () => {
      const pool = (platform.database.db as unknown as { $client: Pool }).$client;
      const holder = await pool.connect();
      try {
        // An application table with live traffic (Forge's own tables are out of every migration's reach).
        await holder.query('CREATE TABLE IF NOT EXISTS app_busy (id int)');
        await holder.query('BEGIN');
        await holder.query('LOCK TABLE app_busy IN ACCESS EXCLUSIVE MODE');
        const holderPid = (await holder.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0].pid;
        const started = Date.now();
        const result = await platform.forge.migrateSchema({ name: 'busy_core', sql: 'ALTER TABLE app_busy ADD COLUMN agent_note text;' });
        const elapsed = Date.now() - started;
        expect(result).toMatchObject({ status: 'failed', error: { code: '55P03', statementIndex: 0, enforcedBy: 'postgres' } });
        expect(result.error?.message).toMatch(/lock timeout/);
        expect(result.error?.blockedBy?.map((b) => b.pid)).toContain(holderPid);
        // Two tries of LOCK_TIMEOUT_MS with a second's backoff between them, then the verdict.
        expect(elapsed).toBeGreaterThanOrEqual(2 * LOCK_TIMEOUT_MS + 1_000);
        expect(elapsed).toBeLessThan(2 * LOCK_TIMEOUT_MS + LOCK_WAIT_MS + 4_000);
      } finally {
        await holder.query('ROLLBACK');
        holder.release();
      }
      expect(await columnExists(platform.database, 'app_busy', 'agent_note')).toBe(false);
      expect(await migrationRows(platform.database, 'busy_core')).toHaveLength(0);
      // With the lock gone, the same migration applies.
      const later = await platform.forge.migrateSchema({ name: 'busy_core', sql: 'ALTER TABLE app_busy ADD COLUMN agent_note text;' });
      expect(later.status).toBe('applied');
      expect(await columnExists(platform.database, 'app_busy', 'agent_note')).toBe(true);
    });
  }
});
