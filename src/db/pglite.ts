import { existsSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import type { PGlite } from '@electric-sql/pglite';
import { drizzle } from 'drizzle-orm/pglite';
import { PRIVATE_DIR_MODE } from '../contract/private-modes';
import { assertChannelName } from './channels';
import { DatabaseOpenError } from './errors';
import { migratePglite } from './migrate';
import { isInMemoryDataDir, PgliteThreadClient } from './pglite-client';
import { lockDataDir } from './pglite-lock';
import * as tables from './schema';
import type { ForgeDatabase, ForgeDb } from './types';

/**
 * DISCARD ALL without its UNLISTEN *: the embedded database's one session also carries the registries' LISTENs. Each
 * part is one of the steps the PostgreSQL manual lists for DISCARD ALL.
 */
const SESSION_RESET = [
  'CLOSE ALL',
  'SET SESSION AUTHORIZATION DEFAULT',
  'RESET ALL',
  'DEALLOCATE ALL',
  'SELECT pg_advisory_unlock_all()',
  'DISCARD PLANS',
  'DISCARD TEMP',
  'DISCARD SEQUENCES',
].join(';');

/**
 * Opens (creating if needed) the embedded database in `dataDir` and applies Forge's migrations. PGlite runs in a
 * thread of its own (src/db/pglite-client.ts), so a long statement neither blocks this thread nor outlives its bound.
 * Only one process may have a directory open; a second one gets a DatabaseOpenError. `memory://` opens a database
 * that lives only in this process.
 */
export async function openPglite(dataDir: string, schema: string): Promise<ForgeDatabase> {
  const inMemory = isInMemoryDataDir(dataDir);
  // Private from the start: PGlite fills a new directory with files of mode 0666 (its initdb image), and only a
  // directory of this user's alone keeps others out of them until startPlatform tightens them.
  if (!inMemory) mkdirSync(dataDir, { recursive: true, mode: PRIVATE_DIR_MODE });
  // Held across restarts of the thread: the directory stays this process's.
  const release = inMemory ? () => undefined : lockDataDir(`${dataDir}.lock`);
  // One session, so a session-level search_path holds for the migrations and every later query (set again on restart).
  const sessionSql = schema === 'public' ? '' : `CREATE SCHEMA IF NOT EXISTS "${schema}"; SET search_path TO "${schema}"`;
  const created = !inMemory && !existsSync(path.join(dataDir, 'PG_VERSION'));
  let client: PgliteThreadClient;
  try {
    client = await PgliteThreadClient.open(dataDir, sessionSql);
  } catch (err) {
    release();
    throw new DatabaseOpenError(`Cannot open the embedded database at ${dataDir}: ${String(err)}`, 'pglite', {
      cause: err,
    });
  }
  try {
    // drizzle-orm/pglite calls query() (with its own parsers), transaction() and the transaction's query().
    const db = drizzle(client as unknown as PGlite, { schema: tables });
    await migratePglite(db, schema);
    // A new database: the thread that created it holds initdb's memory for good (measured 2026-11-28: forge up's first
    // start 1,100 MB RSS idle, a restart 620), so a new thread serves it, opened now: the files its start writes
    // (pg_internal.init) exist before the platform makes FORGE_HOME's files private.
    if (created) {
      await client.recycle();
      await client.query('SELECT 1');
    }
    let closed = false;
    return {
      db: db as unknown as ForgeDb,
      kind: 'pglite',
      schema,
      async close() {
        if (closed) return;
        closed = true;
        try {
          await client.close();
        } finally {
          release();
        }
      },
      async listen(channel, listener) {
        assertChannelName(channel);
        const unlisten = await client.listen(channel, listener);
        return async () => {
          if (!closed) await unlisten();
        };
      },
      onListenerReconnect() {
        // One session, restarted only when a statement is cancelled: what committed before was delivered before,
        // and the cancelled transaction notified nothing.
        return () => undefined;
      },
      async notify(channel, payload) {
        assertChannelName(channel);
        await client.query('SELECT pg_notify($1, $2)', [channel, payload]);
      },
      boundStatement(ms, statement) {
        return client.bounded(ms, statement);
      },
      async isolatedSession(work) {
        try {
          return await work(db as unknown as ForgeDb);
        } finally {
          await client.execOnOpenSession(`${SESSION_RESET};${sessionSql}`);
        }
      },
    };
  } catch (err) {
    await client.close().catch(() => undefined);
    release();
    throw err;
  }
}
