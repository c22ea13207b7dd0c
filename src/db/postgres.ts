import { drizzle } from 'drizzle-orm/node-postgres';
import { migrate } from 'drizzle-orm/node-postgres/migrator';
import { Pool, type PoolClient, type PoolConfig } from 'pg';
import { PlatformUnreachableError } from '../contract/errors';
import { assertChannelName } from './channels';
import { DatabaseOpenError, MigrationError } from './errors';
import { ensureAgentRole } from './agent-role';
import { migrationsFolder, migrationsSchemaFor } from './migrate';
import { PgListener } from './pg-listener';
import * as tables from './schema';
import type { ForgeDatabase, ForgeDb } from './types';

// Any constant works; it only has to be the same in every Forge process that migrates one database.
const MIGRATION_LOCK_KEY = 0x466f7267; // "Forg"

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

/**
 * Applies pending migrations on PostgreSQL under a session advisory lock, so workers starting together do not race
 * (drizzle's migrator reads the last applied migration outside its transaction), then makes sure the role agent
 * migrations run under exists where Forge can create it (agent-role.ts).
 */
async function migratePostgres(client: PoolClient, schema: string): Promise<void> {
  try {
    await client.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK_KEY]);
    try {
      if (schema !== 'public') await client.query(`CREATE SCHEMA IF NOT EXISTS "${schema}"`);
      await migrate(drizzle(client), {
        migrationsFolder: migrationsFolder(),
        migrationsSchema: migrationsSchemaFor(schema),
      });
      await ensureAgentRole(client, schema);
    } finally {
      await client.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK_KEY]);
    }
  } catch (err) {
    throw err instanceof MigrationError ? err : new MigrationError(`Migrating PostgreSQL failed: ${String(err)}`, { cause: err });
  }
}
