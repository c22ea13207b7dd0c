import { drizzle } from 'drizzle-orm/node-postgres';
import { Pool, type PoolConfig } from 'pg';
import { PlatformUnreachableError } from '../contract/errors';
import { assertChannelName } from './channels';
import { DatabaseOpenError } from './errors';
import { migratePostgres } from './migrate';
import { PgListener } from './pg-listener';
import * as tables from './schema';
import type { ForgeDatabase, ForgeDb } from './types';

const UNREACHABLE_CODES = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'ETIMEDOUT', 'EHOSTUNREACH', 'ECONNRESET']);

/** host:port of a postgres URL, for messages (never the password). */
function describePostgresUrl(url: string): string {
  try {
    const u = new URL(url);
    return `${u.hostname}:${u.port || '5432'}${u.pathname}`;
  } catch {
    return '(unparseable DATABASE_URL)';
  }
}

/**
 * Connects to PostgreSQL, applies Forge's migrations (under an advisory lock) and returns the database.
 * @throws PlatformUnreachableError when nothing answers at the URL's address; DatabaseOpenError when the server
 *   rejects the connection (bad password, missing database).
 */
export async function openPostgres(url: string, schema: string, poolConfig: PoolConfig = {}): Promise<ForgeDatabase> {
  const base: PoolConfig = {
    connectionString: url,
    // FORGE_SCHEMA is applied per session, so the unqualified tables of the generated migrations land there.
    options: `-c search_path=${schema}`,
    ...poolConfig,
  };
  const pool = new Pool(base);
  // An idle client that loses its connection emits 'error' on the pool; the pool drops it and makes a new one later.
  pool.on('error', () => undefined);
  try {
    const client = await pool.connect();
    try {
      await migratePostgres(client, schema);
    } finally {
      client.release();
    }
  } catch (err) {
    await pool.end().catch(() => undefined);
    const code = (err as NodeJS.ErrnoException).code;
    const where = describePostgresUrl(url);
    if (code !== undefined && UNREACHABLE_CODES.has(code)) {
      throw new PlatformUnreachableError(`Cannot reach PostgreSQL at ${where} (DATABASE_URL): is the server running?`, where, { cause: err });
    }
    if (err instanceof Error && err.name === 'MigrationError') throw err;
    throw new DatabaseOpenError(`PostgreSQL at ${where} refused the connection: ${String(err)}`, 'postgres', {
      cause: err,
    });
  }
  const listener = new PgListener({ connectionString: url, options: base.options });
  const db = drizzle(pool, { schema: tables });
  let closed: Promise<void> | undefined;
  return {
    db: db as unknown as ForgeDb,
    kind: 'postgres',
    schema,
    close() {
      closed ??= listener.close().then(() => pool.end());
      return closed;
    },
    async listen(channel, cb) {
      assertChannelName(channel);
      return listener.listen(channel, cb);
    },
    onListenerReconnect(callback) {
      return listener.onReconnect(callback);
    },
    async notify(channel, payload) {
      assertChannelName(channel);
      await pool.query('SELECT pg_notify($1, $2)', [channel, payload]);
    },
    boundStatement(_ms, statement) {
      return statement(); // PostgreSQL enforces statement_timeout (the caller's SET LOCAL) itself: 57014
    },
    async isolatedSession(work) {
      const client = await pool.connect();
      // A checked-out client has no pool listener: a backend killed under it (an operator, a server restart) would
      // emit an 'error' nobody handles and end the worker. The query in flight rejects with it all the same.
      const ignore = (): void => undefined;
      client.on('error', ignore);
      try {
        return await work(drizzle(client, { schema: tables }) as unknown as ForgeDb);
      } finally {
        client.release(true); // true: the connection is closed, not returned to the pool
        client.off('error', ignore);
      }
    },
  };
}
