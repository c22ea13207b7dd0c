import { sql } from 'drizzle-orm';
import { postgresErrorOf } from '../../src/db/agent-migrations';
import { StatementBoundError } from '../../src/db/errors';
import { openPglite } from '../../src/db/pglite';
import { PgliteThreadClient } from '../../src/db/pglite-client';
import type { ForgeDatabase } from '../../src/db/types';
import { nextNotification, pgliteBackend, type TestBackend } from './backends';

/** A statement PGlite runs for seconds: a rewrite of every row of `agent_big` computing a volatile default. */
const REWRITE = 'ALTER TABLE agent_big ADD COLUMN agent_tag text DEFAULT md5(repeat(random()::text, 1500))';
const BIG_ROWS = 300_000; // ~19 s for REWRITE on this machine's PGlite, measured; ~0.2 s to create
const BOUND_MS = 500;

async function rows<T = Record<string, unknown>>(database: ForgeDatabase, text: string): Promise<T[]> {
  return ((await database.db.execute(sql.raw(text))) as unknown as { rows: T[] }).rows;
}

/** Runs `fn` while a 10 ms interval counts its ticks; returns the ticks and the elapsed time. */
async function ticking<T>(fn: () => Promise<T>): Promise<{ outcome: PromiseSettledResult<T>; ticks: number; ms: number }> {
  let ticks = 0;
  const timer = setInterval(() => ticks++, 10);
  const started = performance.now();
  const [outcome] = await Promise.allSettled([fn()]);
  const ms = performance.now() - started;
  clearInterval(timer);
  return { outcome, ticks, ms };
}

describe('embedded PGlite in its own thread', () => {
  let backend: TestBackend;
  let database: ForgeDatabase;
  beforeAll(async () => {
    backend = pgliteBackend();
    // Not the public schema: the search_path has to come back with every restarted session.
    database = await backend.open('forge_thread');
    await rows(database, `CREATE TABLE agent_big WITH (autovacuum_enabled = false) AS SELECT g AS id FROM generate_series(1, ${BIG_ROWS}) g`);
    await rows(database, 'CREATE TABLE agent_kept (id int PRIMARY KEY, note text NOT NULL)');
  });
  afterAll(async () => {
    await database?.close();
    await backend?.dispose();
  });

  test('the event loop keeps turning while a long statement runs', async () => {
    const { outcome, ticks, ms } = await ticking(() => rows(database, 'SELECT count(DISTINCT md5(repeat(id::text, 200))) AS n FROM agent_big'));
    expect(outcome.status).toBe('fulfilled');
    expect(ms).toBeGreaterThan(500);
    // A blocked event loop would tick once or twice in all that time.
    expect(ticks).toBeGreaterThan((ms / 10) * 0.5);
  });

  test('a statement past its bound is cancelled; its transaction is discarded, what committed and LISTEN stay', async () => {
    for (let round = 0; round < 3; round++) {
      await rows(database, `INSERT INTO agent_kept VALUES (${round}, 'committed ${round}')`);
      let sibling: Promise<unknown> | undefined; // settles with the error
      const { outcome, ms } = await ticking(() =>
        database.db.transaction(async (tx) => {
          await tx.execute(sql.raw(`INSERT INTO agent_kept VALUES (${100 + round}, 'never committed')`));
          await tx.execute(sql.raw('CREATE TABLE agent_never (id int)'));
          const slow = database.boundStatement(BOUND_MS, () => tx.execute(sql.raw(REWRITE)));
          // Queued behind it in the same transaction (once it is running): in flight when the thread ends.
          await new Promise((resolve) => setTimeout(resolve, 50));
          sibling = tx.execute(sql.raw('SELECT 1')).then(
            () => undefined,
            (e: unknown) => e,
          );
          await slow;
        }),
      );
      expect(outcome.status).toBe('rejected');
      const err = (outcome as PromiseRejectedResult).reason as Error;
      const bound = err instanceof StatementBoundError ? err : (err.cause as Error);
      expect(bound).toBeInstanceOf(StatementBoundError);
      expect(bound).toMatchObject({ boundMs: BOUND_MS, cancelled: true });
      expect(bound.message).toMatch(/cancelled at its 500 ms bound/);
      // Cut off at the bound, far below the statement's ~19 s.
      expect(ms).toBeGreaterThanOrEqual(BOUND_MS - 5);
      expect(ms).toBeLessThan(BOUND_MS + 1_500);
      // The other call in flight failed as a lost connection (SQLSTATE class 08: callers retry it).
      const siblingError = await sibling;
      expect(postgresErrorOf(siblingError)?.code).toBe('08006');

      // The next call reopens the same directory: the transaction is gone, everything committed is there. (The wait
      // covers the reopen and the checks below too: seconds of WASM start-up on a loaded CI machine.)
      const listening = await nextNotification(database, 'forge_thread_test', 30_000);
      expect(await rows(database, 'SELECT id, note FROM agent_kept ORDER BY id')).toEqual(
        Array.from({ length: round + 1 }, (_, i) => ({ id: i, note: `committed ${i}` })),
      );
      expect(await rows(database, "SELECT to_regclass('agent_never') AS t")).toEqual([{ t: null }]);
      expect(await rows(database, "SELECT count(*)::int AS n FROM information_schema.columns WHERE column_name = 'agent_tag'")).toEqual([{ n: 0 }]);
      expect(await rows(database, 'SELECT count(*)::int AS n FROM agent_big')).toEqual([{ n: BIG_ROWS }]);
      await database.notify('forge_thread_test', `round ${round}`);
      await expect(listening.payload).resolves.toBe(`round ${round}`);
      await listening.stop();
    }
  }, 60_000);

  test('a listener subscribed before a cancellation hears notifications committed after it', async () => {
    const heard: string[] = [];
    const unlisten = await database.listen('forge_thread_kept', (p) => heard.push(p));
    await expect(database.boundStatement(BOUND_MS, () => database.db.execute(sql.raw(REWRITE)))).rejects.toMatchObject({
      cause: expect.objectContaining({ name: 'StatementBoundError', cancelled: true }),
    });
    await database.db.transaction(async (tx) => {
      await tx.execute(sql`SELECT pg_notify('forge_thread_kept', 'after the restart')`);
    });
    await new Promise((r) => setTimeout(r, 50));
    expect(heard).toEqual(['after the restart']);
    await unlisten();
  });

  test('the data directory stays locked across restarts', async () => {
    await expect(database.boundStatement(BOUND_MS, () => database.db.execute(sql.raw(REWRITE)))).rejects.toMatchObject({
      cause: expect.objectContaining({ name: 'StatementBoundError', cancelled: true }),
    });
    expect(await rows(database, 'SELECT 1 AS one')).toEqual([{ one: 1 }]); // reopened in a new thread
    await expect(backend.open('forge_thread')).rejects.toThrow(/already open in this process/);
  });
});

describe('embedded PGlite in memory', () => {
  test('a statement past its bound runs to its end (ending the thread would lose the database) and fails then', async () => {
    const database = await openPglite('memory://', 'public');
    try {
      await rows(database, 'CREATE TABLE agent_kept (id int)');
      await rows(database, 'INSERT INTO agent_kept VALUES (1)');
      const slow = 'SELECT count(DISTINCT md5(g::text)) FROM generate_series(1, 100000) g';
      const err = await database.db
        .transaction(async (tx) => {
          await tx.execute(sql.raw('INSERT INTO agent_kept VALUES (2)'));
          await database.boundStatement(1, () => tx.execute(sql.raw(slow)));
        })
        .then(
          () => undefined,
          (e: unknown) => e,
        );
      expect(err).toBeInstanceOf(StatementBoundError);
      expect(err).toMatchObject({ boundMs: 1, cancelled: false });
      expect((err as Error).message).toMatch(/in-memory embedded database cannot be cancelled/);
      expect(await rows(database, 'SELECT id FROM agent_kept')).toEqual([{ id: 1 }]);
    } finally {
      await database.close();
    }
  });
});

describe('the thread client', () => {
  let client: PgliteThreadClient;
  beforeAll(async () => {
    client = await PgliteThreadClient.open('memory://');
  });
  afterAll(async () => {
    await client?.close();
  });

  test("drizzle's identity parsers reach the thread as type OIDs; any other parser fails loudly", async () => {
    const raw = await client.query<{ t: unknown }>("SELECT '2026-01-02 03:04:05'::timestamp AS t", [], {
      rowMode: 'object',
      parsers: { 1114: (value) => value },
    });
    expect(raw.rows).toEqual([{ t: '2026-01-02 03:04:05' }]);
    const parsed = await client.query<{ t: unknown }>("SELECT '2026-01-02 03:04:05'::timestamp AS t");
    // Parsed in the thread (a Date of another realm than jest's, hence no toBeInstanceOf).
    expect(Object.prototype.toString.call(parsed.rows[0].t)).toBe('[object Date]');
    await expect(client.query('SELECT 1', [], { parsers: { 1114: (value) => new Date(value) } })).rejects.toThrow(
      /parser for type 1114 is not the identity function/,
    );
    await expect(client.query('SELECT 1', [], { paramTypes: [23] })).rejects.toThrow(/options paramTypes cannot reach/);
  });

  test('database errors keep their PostgreSQL fields', async () => {
    const err = await client.query('SELECT * FROM nowhere').catch((e: unknown) => e);
    expect(postgresErrorOf(err)).toMatchObject({ code: '42P01', position: '15', message: 'relation "nowhere" does not exist' });
  });

  test('a committed transaction that was rolled back by an error inside reports 25P02, as PGlite does', async () => {
    const err = await client
      .transaction(async (tx) => {
        await tx.query('SELECT 1/0').catch(() => undefined);
      })
      .catch((e: unknown) => e);
    expect(postgresErrorOf(err)?.code).toBe('25P02');
  });
});
