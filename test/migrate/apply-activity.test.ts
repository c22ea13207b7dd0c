import { ApplicationFailure } from '@temporalio/common';
import { createMigrationActivities, type ApplyMigrationInput } from '../../src/activities/migration-activities';
import { isConnectionSqlState, type ForgeDatabase } from '../../src/db';
import { migrationChecksum } from '../../src/policy';
import { FailureType } from '../../src/contract/failures';
import { backendKinds, type TestBackend } from '../db/backends';
import { applyToTheEnd, migrationRows, query, relationExists } from './helpers';

const limits = { lockTimeoutMs: 2_000, statementTimeoutMs: 10_000 };

function input(name: string, sql: string, runId: string): ApplyMigrationInput {
  return { name, sql, checksum: migrationChecksum(sql), workflowId: `schema-migrate/${name}`, runId };
}

/** The activities alone, as Temporal's retries would call them: no server, the real database. */
describe.each(backendKinds())('the apply activity on $kind', ({ make }) => {
  let backend: TestBackend;
  let database: ForgeDatabase;
  let activities: ReturnType<typeof createMigrationActivities>;
  beforeAll(async () => {
    backend = make();
    database = await backend.open();
    activities = createMigrationActivities({ database, schema: 'public', limits });
  });
  afterAll(async () => {
    await database?.close();
    await backend?.dispose();
  });

  test('a worker killed between COMMIT and completion: the retry reports applied once and runs nothing again', async () => {
    // CREATE TABLE without IF NOT EXISTS: running it a second time would fail with 42P07.
    const once = input('once', 'CREATE TABLE agent_once (id int);', 'run-1');
    const first = await activities.applyMigration(once);
    expect(first).toMatchObject({ status: 'applied', byEarlierAttempt: false, appliedBy: { runId: 'run-1' } });
    // The retry Temporal would make, with the same input, after the first attempt's completion was lost.
    const retry = await activities.applyMigration(once);
    expect(retry).toMatchObject({ status: 'applied', byEarlierAttempt: true, appliedAt: first.appliedAt });
    expect(await migrationRows(database, 'once')).toHaveLength(1);
    expect(await relationExists(database, 'agent_once')).toBe(true);
    // The event log holds one migration.applied for it: the retry wrote nothing.
    const events = await query(database, `SELECT * FROM events WHERE kind = 'migration.applied' AND subject = 'once'`);
    expect(events).toHaveLength(1);
    // Local activities run again when the worker died before Temporal recorded them: the same run's validate step
    // finds its own row and lets apply report it, so the run says `applied`, not `alreadyApplied` by itself (issue 9).
    const revalidated = await activities.validateMigration({ name: 'once', sql: once.sql, checksum: once.checksum, runId: 'run-1' });
    expect(revalidated.status).toBe('ready');
    expect(await activities.validateMigration({ name: 'once', sql: once.sql, checksum: once.checksum, runId: 'run-2' })).toMatchObject({
      status: 'alreadyApplied',
      appliedBy: { runId: 'run-1' },
    });
    // Another run with the same SQL finds it applied.
    expect(await activities.applyMigration(input('once', once.sql, 'run-2'))).toMatchObject({ status: 'alreadyApplied', appliedBy: { runId: 'run-1' } });
  });

  test('verdicts are non-retryable failures with stable types', async () => {
    const mismatch = await activities.applyMigration(input('once', 'CREATE TABLE agent_twice (id int);', 'run-3')).catch((e: unknown) => e);
    expect(mismatch).toBeInstanceOf(ApplicationFailure);
    expect(mismatch).toMatchObject({ type: FailureType.migrationRejected, nonRetryable: true });
    const failed = await activities.applyMigration(input('typo', 'CREATE TABLE agent_typo (v nope_type);', 'run-4')).catch((e: unknown) => e);
    expect(failed).toMatchObject({ type: FailureType.migrationFailed, nonRetryable: true });
    expect((failed as ApplicationFailure).details?.[0]).toMatchObject({ error: { code: '42704', statementIndex: 0, line: 1, column: 28 } });
    const refused = await activities
      .validateMigration({ name: 'p', sql: 'DELETE FROM events;', checksum: migrationChecksum('DELETE FROM events;') })
      .catch((e: unknown) => e);
    expect(refused).toMatchObject({ type: FailureType.migrationRejected, nonRetryable: true });
  });

  test('the caps on agent columns and indexes of a core table count what earlier migrations added (issue 27)', async () => {
    await query(database, 'CREATE TABLE caps_core (id int PRIMARY KEY, name text)');
    const columns = (from: number, n: number) =>
      `ALTER TABLE caps_core ${Array.from({ length: n }, (_, i) => `ADD COLUMN agent_c${from + i} int`).join(', ')};`;
    const indexes = (from: number, n: number) => Array.from({ length: n }, (_, i) => `CREATE INDEX agent_caps_i${from + i} ON caps_core (id);`).join('\n');
    expect(await applyToTheEnd(activities, input('caps-1', `${columns(0, 30)}\n${indexes(0, 7)}`, 'caps-run-1'))).toMatchObject({ status: 'applied' });
    // Alone, each of these is under the caps; with the 30 columns and 7 indexes already there, they are over.
    for (const [name, sql, rule] of [
      ['caps-2', columns(30, 3), 'core-column-cap'],
      ['caps-3', indexes(7, 2), 'core-index-cap'],
    ] as const) {
      const refused = await activities.validateMigration({ name, sql, checksum: migrationChecksum(sql) }).catch((e: unknown) => e);
      expect(refused).toMatchObject({ type: FailureType.migrationRejected, nonRetryable: true });
      const details = (refused as ApplicationFailure).details?.[0] as { reason: string; statements: Array<{ rule: string }> };
      expect(details.reason).toBe('policy');
      expect(details.statements.map((s) => s.rule)).toContain(rule);
    }
    expect(await applyToTheEnd(activities, input('caps-4', `${columns(30, 2)}\n${indexes(7, 1)}`, 'caps-run-4'))).toMatchObject({ status: 'applied' });
  });

  test('concurrent applies of one name, without Temporal in front: exactly one runs', async () => {
    const same = 'CREATE TABLE agent_contended (id int);';
    const results = await Promise.allSettled(Array.from({ length: 6 }, (_, i) => activities.applyMigration(input('contended', same, `r${i}`))));
    const statuses = results.map((r) => (r.status === 'fulfilled' ? r.value.status : 'error')).sort();
    expect(statuses).toEqual(['alreadyApplied', 'alreadyApplied', 'alreadyApplied', 'alreadyApplied', 'alreadyApplied', 'applied']);
    const different = await Promise.allSettled(
      Array.from({ length: 4 }, (_, i) => activities.applyMigration(input('contended_sql', `CREATE TABLE agent_variant_${i} (id int);`, `v${i}`))),
    );
    expect(different.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
    expect(different.filter((r) => r.status === 'rejected').map((r) => (r as PromiseRejectedResult).reason.type)).toEqual(
      Array(3).fill(FailureType.migrationRejected),
    );
    expect(await migrationRows(database, 'contended_sql')).toHaveLength(1);
    let created = 0;
    for (let i = 0; i < 4; i++) if (await relationExists(database, `agent_variant_${i}`)) created++;
    expect(created).toBe(1);
  });
});

test('connection SQLSTATEs are retried, every other SQLSTATE is a verdict', () => {
  expect(['08006', '08001', '57P01', '57P02', '57P03', '53300'].every(isConnectionSqlState)).toBe(true);
  // 08P01 is the server refusing what it was sent (a NUL byte once made Forge retry it forever): a verdict.
  expect(isConnectionSqlState('08P01')).toBe(false);
  expect(['42704', '55P03', '57014', '42601', '23505', '42P07'].some(isConnectionSqlState)).toBe(false);
});
