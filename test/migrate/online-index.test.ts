/**
 * SCHEMA_POLICY.md "Round three", locks stay short, on a real PostgreSQL, through the migration workflow and with the
 * application's own connections beside it:
 *  - an index the agent creates on a core table is built CONCURRENTLY after the transaction, as its own step (seen in
 *    pg_stat_progress_create_index while the application keeps writing), and the result says so;
 *  - a core-table lock not granted under the short lock timeout is waited out by the run (its stage names the
 *    session holding the lock) while the application's other queries are not held up; past the wait budget the run
 *    fails naming the holder, with nothing applied;
 *  - a build that meets a writer's open transaction leaves no INVALID index behind, and the run builds it later;
 *  - a transaction that keeps a core table locked while slow work runs is cut off at the hold bound, rolled back;
 *  - a statement naming an index that is built after the transaction is refused before anything runs.
 * On PGlite (no concurrent build, one session) the index is built in the transaction and the result has no `online`.
 */
import { Client } from 'pg';
import type { MigrateSchemaResult } from '../../src/contract/migration-runs';
import { postgresBackend } from '../db/backends';
import { startTestPlatform, useTemporal, type TestPlatform } from '../helpers/platform';
import { describeIf } from '../helpers/skip';
import { columnExists, migrationRows, query, relationExists } from './helpers';

const DATABASE_URL = process.env.DATABASE_URL;
const describePg = describeIf(DATABASE_URL, 'DATABASE_URL is not set (concurrent index builds need PostgreSQL; CI sets it)');

const CORE_LOCK_TIMEOUT_MS = 300;
const CORE_LOCK_HOLD_MS = 400;
const LOCK_WAIT_MS = 4_000;

const temporal = useTemporal();

/** The application: a plain connection of its own, writing to its tables as it always does. */
async function connect(url: string): Promise<Client> {
  const client = new Client({ connectionString: url, application_name: 'the-application' });
  client.on('error', () => undefined);
  await client.connect();
  return client;
}

/** Runs `write` in a loop until stopped; returns the slowest write it saw (ms). */
function writeLoop(write: () => Promise<unknown>): { stop: () => Promise<{ maxMs: number; count: number }> } {
  let running = true;
  let maxMs = 0;
  let count = 0;
  const loop = (async () => {
    while (running) {
      const t = performance.now();
      await write();
      maxMs = Math.max(maxMs, performance.now() - t);
      count++;
      await new Promise((r) => setTimeout(r, 5));
    }
  })();
  return {
    stop: async () => {
      running = false;
      await loop;
      return { maxMs, count };
    },
  };
}

async function indexValid(platform: TestPlatform, index: string): Promise<boolean | undefined> {
  const [row] = await query<{ valid: boolean }>(
    platform.database,
    `SELECT i.indisvalid AND i.indisready AS valid FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid WHERE c.relname = '${index}'`,
  );
  return row?.valid;
}

describePg('online index builds and short locks on core tables (PostgreSQL)', () => {
  let platform: TestPlatform;
  let app: Client;
  let other: Client;
  const backend = DATABASE_URL ? postgresBackend(DATABASE_URL) : undefined;

  beforeAll(async () => {
    platform = await startTestPlatform(temporal(), 'postgres', {
      backend,
      env: {
        FORGE_MIGRATION_CORE_LOCK_TIMEOUT_MS: String(CORE_LOCK_TIMEOUT_MS),
        FORGE_MIGRATION_CORE_LOCK_HOLD_MS: String(CORE_LOCK_HOLD_MS),
        FORGE_MIGRATION_LOCK_WAIT_MS: String(LOCK_WAIT_MS),
      },
    });
    app = await connect(backend!.url!);
    other = await connect(backend!.url!);
    await app.query(
      `CREATE TABLE orders (id bigserial PRIMARY KEY, customer varchar(80) NOT NULL, total numeric(12, 2) NOT NULL DEFAULT 0, placed_at timestamptz NOT NULL DEFAULT now())`,
    );
    await app.query(`INSERT INTO orders (customer, total) SELECT 'c' || (g % 5000), g FROM generate_series(1, 400000) g`);
    await app.query('ANALYZE orders');
  }, 180_000);
  afterAll(async () => {
    await app?.end().catch(() => undefined);
    await other?.end().catch(() => undefined);
    await platform?.teardown();
  });

  test('a core index is built CONCURRENTLY after the transaction while the application writes; the result says so', async () => {
    const seen = new Set<string>();
    let watching = true;
    const watch = (async () => {
      while (watching) {
        const { rows } = await other.query<{ command: string }>('SELECT command FROM pg_stat_progress_create_index');
        for (const r of rows) seen.add(r.command);
        await new Promise((r) => setTimeout(r, 10));
      }
    })();
    const writes = writeLoop(() => app.query(`INSERT INTO orders (customer, total) VALUES ('loop', 1)`));
    let result: MigrateSchemaResult;
    try {
      result = await platform.forge.migrateSchema({
        name: 'online_1',
        sql: 'ALTER TABLE orders ADD COLUMN agent_note text;\nCREATE INDEX agent_orders_customer_idx ON orders (customer, placed_at);\n',
      });
    } finally {
      watching = false;
      await watch;
    }
    const { maxMs, count } = await writes.stop();
    expect(result).toMatchObject({ status: 'applied' });
    expect(result.online).toEqual([
      { statementIndex: 1, index: 'agent_orders_customer_idx', table: 'orders', outcome: 'built', durationMs: expect.any(Number) },
    ]);
    expect(result.stages.map((s) => [s.name, s.status])).toEqual([
      ['validate', 'done'],
      ['apply', 'done'],
      ['build', 'done'],
      ['record', 'done'],
    ]);
    expect([...seen]).toContain('CREATE INDEX CONCURRENTLY');
    expect([...seen]).not.toContain('CREATE INDEX');
    expect(await indexValid(platform, 'agent_orders_customer_idx')).toBe(true);
    const [row] = await query<{ state: string }>(platform.database, `SELECT state FROM forge_migrations WHERE name = 'online_1'`);
    expect(row.state).toBe('applied');
    const events = await query(platform.database, `SELECT 1 FROM events WHERE kind = 'migration.applied' AND subject = 'online_1'`);
    expect(events).toHaveLength(1);
    // The application never waited on the migration longer than the short lock timeout (plus a loaded machine's slack).
    expect(count).toBeGreaterThan(0);
    expect(maxMs).toBeLessThan(CORE_LOCK_TIMEOUT_MS + 1_500);
    expect((await platform.forge.listMigrations()).migrations.find((m) => m.name === 'online_1')).toMatchObject({ state: 'applied' });
  }, 120_000);

  test('a core lock not granted is waited out by the run, which names the holder, while the application goes on', async () => {
    // The application holds a transaction on orders open (its lock conflicts with ADD COLUMN's) until the run says it
    // waits (at most 20 s): a fixed hold could end before a loaded machine's run first tried the lock.
    await app.query('BEGIN');
    await app.query('SELECT count(*) FROM orders WHERE id < 10');
    const holderPid = (await app.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0].pid;
    const summaries: string[] = [];
    let sawWaiting: () => void = () => undefined;
    const waiting = new Promise<void>((resolve) => (sawWaiting = resolve));
    const reads = writeLoop(() => other.query('SELECT id FROM orders WHERE id = 1'));
    const release = Promise.race([waiting, new Promise((r) => setTimeout(r, 20_000))]).then(() => app.query('COMMIT'));
    const result = await platform.forge.migrateSchema(
      { name: 'short_lock_1', sql: 'ALTER TABLE orders ADD COLUMN agent_flag boolean DEFAULT false;' },
      {
        onProgress: (p) => {
          summaries.push(...p.stages.map((s) => s.summary ?? ''));
          if (summaries.some((s) => s.includes(`locked by pid ${holderPid}`))) sawWaiting();
        },
      },
    );
    await release;
    const { maxMs } = await reads.stop();
    expect(result).toMatchObject({ status: 'applied' });
    expect(summaries.some((s) => s.includes(`locked by pid ${holderPid}`))).toBe(true);
    expect(await columnExists(platform.database, 'orders', 'agent_flag')).toBe(true);
    // Readers queue behind the migration's waiting ACCESS EXCLUSIVE request only for the short lock timeout.
    expect(maxMs).toBeLessThan(CORE_LOCK_TIMEOUT_MS + 1_500);
  }, 60_000);

  test('past the lock-wait budget the run fails naming the holder, and nothing of the migration is there', async () => {
    await app.query('BEGIN');
    await app.query('SELECT count(*) FROM orders WHERE id < 10');
    const holderPid = (await app.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0].pid;
    try {
      const result = await platform.forge.migrateSchema({ name: 'short_lock_2', sql: 'ALTER TABLE orders ADD COLUMN agent_never int DEFAULT 0;' });
      expect(result).toMatchObject({ status: 'failed', error: { code: '55P03' } });
      expect(result.error?.blockedBy?.map((b) => b.pid)).toContain(holderPid);
      expect(result.message).toContain(`pid ${holderPid}`);
    } finally {
      await app.query('COMMIT');
    }
    expect(await columnExists(platform.database, 'orders', 'agent_never')).toBe(false);
    expect(await migrationRows(platform.database, 'short_lock_2')).toHaveLength(0);
  }, 60_000);

  test('an INVALID index left by a failed build is dropped and built again; an open writer only delays the build', async () => {
    // A build that failed half-way (as a killed worker's or a refused one's would) leaves an INVALID index of the name.
    const failed = await app.query('CREATE UNIQUE INDEX CONCURRENTLY agent_orders_total_idx ON orders (customer)').catch((e: unknown) => e);
    expect(failed).toMatchObject({ code: '23505' });
    expect(await indexValid(platform, 'agent_orders_total_idx')).toBe(false);
    // A writer's transaction open meanwhile: CREATE INDEX CONCURRENTLY waits for it; the application does not wait.
    await app.query('BEGIN');
    await app.query(`INSERT INTO orders (customer, total) VALUES ('writer', 2)`);
    const release = new Promise<void>((resolve) => setTimeout(() => void app.query('COMMIT').then(() => resolve()), 1_000));
    let result: MigrateSchemaResult;
    try {
      result = await platform.forge.migrateSchema({ name: 'online_2', sql: 'CREATE INDEX agent_orders_total_idx ON orders (total);' });
    } finally {
      await release;
    }
    expect(result).toMatchObject({ status: 'applied', online: [{ index: 'agent_orders_total_idx', outcome: 'built' }] });
    expect(await indexValid(platform, 'agent_orders_total_idx')).toBe(true);
    const [def] = await query<{ def: string }>(platform.database, `SELECT pg_get_indexdef('agent_orders_total_idx'::regclass) AS def`);
    expect(def.def).toMatch(/^CREATE INDEX agent_orders_total_idx ON .*orders USING btree \(total\)$/);
  }, 60_000);

  test('a transaction that keeps a core table locked while slow work runs is cut off at the hold bound', async () => {
    const base = await platform.forge.migrateSchema({ name: 'hold_base', sql: 'CREATE TABLE agent_big (id bigint, body text);' });
    expect(base.status).toBe('applied');
    await app.query(`INSERT INTO agent_big SELECT g, md5(g::text) FROM generate_series(1, 600000) g`);
    const result = await platform.forge.migrateSchema({
      name: 'hold_1',
      sql: 'ALTER TABLE orders ADD COLUMN agent_hold int;\nCREATE INDEX agent_big_body_idx ON agent_big (body);\n',
    });
    expect(result).toMatchObject({ status: 'failed', error: { code: '57014', statementIndex: 1 } });
    expect(result.message).toMatch(/locked by statement 0, past the 400 ms/);
    expect(await columnExists(platform.database, 'orders', 'agent_hold')).toBe(false);
    expect(await relationExists(platform.database, 'agent_big_body_idx')).toBe(false);
    // The same work in the other order holds the core lock only for the ALTER: applied.
    const reordered = await platform.forge.migrateSchema({
      name: 'hold_2',
      sql: 'CREATE INDEX agent_big_body_idx ON agent_big (body);\nALTER TABLE orders ADD COLUMN agent_hold int;\n',
    });
    expect(reordered.status).toBe('applied');
  }, 120_000);

  test('a statement naming an index built after the transaction is refused by the policy before anything runs', async () => {
    const result = await platform.forge.migrateSchema({
      name: 'names_online',
      sql: "CREATE INDEX agent_orders_placed_idx ON orders (placed_at);\nCOMMENT ON INDEX agent_orders_placed_idx IS 'by day';\n",
    });
    expect(result).toMatchObject({ status: 'rejected', reason: 'policy' });
    expect(result.statements?.[1]).toMatchObject({ accepted: false, rule: 'core-index-named-later' });
    expect(result.statements?.[1].message).toMatch(/later migration/);
    expect(await relationExists(platform.database, 'agent_orders_placed_idx')).toBe(false);
  }, 60_000);
});

describe('a core index on embedded PGlite is built in the transaction', () => {
  let platform: TestPlatform;
  beforeAll(async () => {
    platform = await startTestPlatform(temporal(), 'pglite');
    await query(platform.database, 'CREATE TABLE orders (id bigserial PRIMARY KEY, customer varchar(80))');
  }, 120_000);
  afterAll(async () => platform?.teardown());

  test('applied with no online step', async () => {
    const result = await platform.forge.migrateSchema({ name: 'pglite_index', sql: 'CREATE INDEX agent_orders_c_idx ON orders (customer);' });
    expect(result.status).toBe('applied');
    expect(result.online).toBeUndefined();
    expect(result.stages.find((s) => s.name === 'build')?.status).toBe('skipped');
    expect(await relationExists(platform.database, 'agent_orders_c_idx')).toBe(true);
  }, 60_000);
});
