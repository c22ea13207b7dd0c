import { sql } from 'drizzle-orm';
import type { LockHolder } from '../contract/migration-runs';
import { enterAgentRole } from './agent-role';
import { isConnectionSqlState, postgresErrorOf } from './agent-migrations';
import { MigrationStatementError } from './errors';
import { quoteIdent } from './quote-ident';
import type { ForgeDatabase, ForgeDb } from './types';

export type { LockHolder };

/** One index on a core table to build CONCURRENTLY (SCHEMA_POLICY.md "Round three"). */
export interface OnlineIndexInput {
  /** The index's name, as the migration gives it (`agent_…`). */
  index: string;
  /** The core table it indexes. */
  table: string;
  /** The statement as `CREATE INDEX CONCURRENTLY …` (policy/lock-plan.ts concurrentIndexSql). */
  statement: string;
}

export interface OnlineIndexLimits {
  /** The lock timeout of the build's own lock waits (the short core lock timeout). */
  lockTimeoutMs: number;
  /** The bound of the build itself. */
  statementTimeoutMs: number;
}

/** What a build in progress reports (pg_stat_progress_create_index), for the activity's heartbeat. */
export interface OnlineIndexProgress {
  phase: string;
  blocksDone?: number;
  blocksTotal?: number;
}

export interface OnlineIndexResult {
  /** `built` by this call; `present`: a valid index of this name on this table was there already (an earlier attempt). */
  outcome: 'built' | 'present';
  /** An INVALID index of this name, left by a failed or killed attempt, was dropped first. */
  droppedInvalid: boolean;
  durationMs: number;
}

// Session advisory locks of online builds: one per index name, so a retry knows whether an earlier build still runs.
const ONLINE_INDEX_LOCK_CLASS = 0x466f6978; // "Foix"
const PROGRESS_EVERY_MS = 2_000;

/**
 * Builds one core-table index `CONCURRENTLY` (PostgreSQL only), idempotent by name: a valid index of that name on
 * that table is the result of an earlier attempt and is left alone; an INVALID one (a build that failed or whose
 * worker was killed) is dropped `CONCURRENTLY` before the build. An earlier attempt's backend still building (its
 * worker gone, the server not yet aware) is found by the index's advisory lock and terminated. The build runs under
 * the agent role, with the short lock timeout (a lock not granted ends it with 55P03, for the workflow to retry
 * later) and the statement bound, on a session of its own that notices a vanished client within a second.
 *
 * @throws MigrationStatementError for a verdict (55P03 lock not granted, 57014 the bound, any SQL error); the INVALID
 *   index it left is dropped before. Connection errors are thrown as they are, for the caller to retry.
 */
export async function buildIndexOnline(
  database: ForgeDatabase,
  input: OnlineIndexInput,
  limits: OnlineIndexLimits,
  onProgress: (progress: OnlineIndexProgress) => void,
): Promise<OnlineIndexResult> {
  if (database.kind !== 'postgres') throw new Error('online index builds need PostgreSQL (PGlite builds in the transaction)');
  const started = performance.now();
  return database.isolatedSession(async (db) => {
    await db.execute(sql.raw("SET application_name = 'forge-online-index'"));
    await takeBuildLock(db, database.schema, input.index, limits.lockTimeoutMs);
    const existing = await indexState(db, database.schema, input.index);
    if (existing?.valid && existing.table === input.table) {
      return { outcome: 'present', droppedInvalid: false, durationMs: Math.round(performance.now() - started) };
    }
    if (existing && existing.table !== input.table) {
      throw new MigrationStatementError(`relation "${input.index}" already exists (on table ${existing.table})`, { code: '42P07', enforcedBy: 'postgres' });
    }
    await enterAgentRole(db, 'session');
    await db.execute(
      sql`SELECT set_config('lock_timeout', ${`${limits.lockTimeoutMs}ms`}, false), set_config('statement_timeout', ${`${limits.statementTimeoutMs}ms`}, false)`,
    );
    // PostgreSQL 14+: a build whose client vanished (a killed worker) stops within a second instead of running on.
    await db.execute(sql.raw("SELECT set_config(name, '1000', false) FROM pg_settings WHERE name = 'client_connection_check_interval'"));
    const droppedInvalid = existing !== undefined;
    if (droppedInvalid) await dropInvalid(db, database.schema, input.index);
    const pid = await backendPid(db);
    // Beats even when the progress view is empty (a build waiting for older transactions to end shows its phase there).
    const poll = setInterval(
      () =>
        void readProgress(database, pid).then(
          (p) => onProgress(p ?? { phase: 'starting' }),
          () => onProgress({ phase: 'unknown' }),
        ),
      PROGRESS_EVERY_MS,
    );
    try {
      await db.execute(sql.raw(input.statement));
    } catch (err) {
      const pg = postgresErrorOf(err);
      if (!pg || isConnectionSqlState(pg.code)) throw err;
      // A failed CONCURRENTLY build leaves an INVALID index that every write still maintains: never leave it.
      await dropInvalid(db, database.schema, input.index).catch(() => undefined);
      throw new MigrationStatementError(pg.message, { code: pg.code, detail: pg.detail, hint: pg.hint, enforcedBy: 'postgres' }, { cause: err });
    } finally {
      clearInterval(poll);
    }
    return { outcome: 'built', droppedInvalid, durationMs: Math.round(performance.now() - started) };
  });
}

/**
 * The sessions holding a lock on any of `tables` (in the configured schema) that another session waits for or could
 * wait for: who a migration's `lock_timeout` gave up on. Read after the fact, so it names who held it then or since.
 */
export async function lockHolders(database: ForgeDatabase, tables: string[]): Promise<LockHolder[]> {
  if (database.kind !== 'postgres' || tables.length === 0) return [];
  const result = await database.db.execute(sql`
    SELECT l.pid, l.mode, c.relname AS "table", a.state, left(a.query, 200) AS query,
           (extract(epoch FROM now() - a.xact_start) * 1000)::bigint AS "transactionMs"
      FROM pg_locks l
      JOIN pg_class c ON c.oid = l.relation
      JOIN pg_namespace n ON n.oid = c.relnamespace
      LEFT JOIN pg_stat_activity a ON a.pid = l.pid
     WHERE l.granted AND l.locktype = 'relation' AND n.nspname = ${database.schema}
       AND c.relname = ANY(${`{${tables.map((t) => `"${t.replace(/["\\]/g, '\\$&')}"`).join(',')}}`}::text[])
       AND l.pid <> pg_backend_pid()
     ORDER BY a.xact_start NULLS LAST
     LIMIT 5`);
  return (result as unknown as { rows: Array<LockHolder & { transactionMs: string | number | null }> }).rows.map((r) => ({
    pid: Number(r.pid),
    mode: r.mode,
    table: r.table,
    state: r.state ?? undefined,
    query: r.query ?? undefined,
    transactionMs: r.transactionMs === null ? undefined : Number(r.transactionMs),
  }));
}

async function takeBuildLock(db: ForgeDb, schema: string, index: string, lockTimeoutMs: number): Promise<void> {
  const key = sql`${ONLINE_INDEX_LOCK_CLASS}, hashtext(${`${schema}.${index}`})`;
  const [got] = await rowsOf<{ ok: boolean }>(db, sql`SELECT pg_try_advisory_lock(${key}) AS ok`);
  if (got?.ok) return;
  // An earlier attempt's session still holds it: its worker is gone (Temporal retried this step), so end it.
  await db.execute(sql`
    SELECT pg_terminate_backend(l.pid) FROM pg_locks l
     WHERE l.locktype = 'advisory' AND l.classid = ${ONLINE_INDEX_LOCK_CLASS}
       AND l.objid = hashtext(${`${schema}.${index}`})::oid AND l.granted AND l.pid <> pg_backend_pid()`);
  await db.execute(sql`SELECT set_config('lock_timeout', ${`${Math.max(lockTimeoutMs, 5_000)}ms`}, false)`);
  await db.execute(sql`SELECT pg_advisory_lock(${key})`);
}

async function indexState(db: ForgeDb, schema: string, index: string): Promise<{ valid: boolean; table: string } | undefined> {
  const [row] = await rowsOf<{ valid: boolean; table: string }>(
    db,
    sql`SELECT i.indisvalid AND i.indisready AS valid, t.relname AS "table"
          FROM pg_class ic JOIN pg_namespace n ON n.oid = ic.relnamespace
          JOIN pg_index i ON i.indexrelid = ic.oid JOIN pg_class t ON t.oid = i.indrelid
         WHERE n.nspname = ${schema} AND ic.relname = ${index}`,
  );
  return row;
}

async function dropInvalid(db: ForgeDb, schema: string, index: string): Promise<void> {
  await db.execute(sql.raw(`DROP INDEX CONCURRENTLY IF EXISTS ${quoteIdent(schema)}.${quoteIdent(index)}`));
}

async function backendPid(db: ForgeDb): Promise<number> {
  const [row] = await rowsOf<{ pid: number }>(db, sql`SELECT pg_backend_pid() AS pid`);
  return Number(row.pid);
}

async function readProgress(database: ForgeDatabase, pid: number): Promise<OnlineIndexProgress | undefined> {
  const [row] = await rowsOf<{ phase: string; blocks_done: string; blocks_total: string }>(
    database.db,
    sql`SELECT phase, blocks_done, blocks_total FROM pg_stat_progress_create_index WHERE pid = ${pid}`,
  );
  return row && { phase: row.phase, blocksDone: Number(row.blocks_done), blocksTotal: Number(row.blocks_total) };
}

async function rowsOf<T>(db: Pick<ForgeDb, 'execute'>, query: ReturnType<typeof sql>): Promise<T[]> {
  return ((await db.execute(query)) as unknown as { rows: T[] }).rows;
}
