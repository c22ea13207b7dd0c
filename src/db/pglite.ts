import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import { drizzle } from 'drizzle-orm/pglite';
import { assertChannelName } from './channels';
import { DatabaseOpenError } from './errors';
import { migratePglite } from './migrate';
import { lockDataDir } from './pglite-lock';
import * as tables from './schema';
import type { ForgeDatabase, ForgeDb } from './types';

/**
 * Opens (creating if needed) the embedded database in `dataDir` and applies Forge's migrations.
 * Only one process may have it open; a second one gets a DatabaseOpenError.
 */
export async function openPglite(dataDir: string, schema: string): Promise<ForgeDatabase> {
  mkdirSync(path.dirname(dataDir), { recursive: true });
  const release = lockDataDir(`${dataDir}.lock`);
  let client: PGlite;
  try {
    client = await PGlite.create({ dataDir });
  } catch (err) {
    release();
    throw new DatabaseOpenError(`Cannot open the embedded database at ${dataDir}: ${String(err)}`, 'pglite', {
      cause: err,
    });
  }
  try {
    // One connection, so a session-level search_path holds for the migrations and every later query.
    if (schema !== 'public') {
      await client.exec(`CREATE SCHEMA IF NOT EXISTS "${schema}"; SET search_path TO "${schema}"`);
    }
    const db = drizzle(client, { schema: tables });
    await migratePglite(db, schema);
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
        return () => undefined; // one in-process backend: there is no connection to lose
      },
      async notify(channel, payload) {
        assertChannelName(channel);
        await client.query('SELECT pg_notify($1, $2)', [channel, payload]);
      },
    };
  } catch (err) {
    await client.close().catch(() => undefined);
    release();
    throw err;
  }
}
