import type { ForgeConfig } from '../config';
import { openPglite } from './pglite';
import type * as PostgresModule from './postgres';
import type { ForgeDatabase } from './types';

/**
 * node-postgres and drizzle's driver for it, loaded only when DATABASE_URL names PostgreSQL: a worker on the embedded
 * database starts without them (40-55 ms less of loading on its way to polling).
 */
// eslint-disable-next-line @typescript-eslint/no-require-imports
const postgresModule = (): typeof PostgresModule => require('./postgres');

/**
 * Opens Forge's database as configured (PostgreSQL when DATABASE_URL is set, else embedded PGlite under
 * $FORGE_HOME/pgdata) and applies pending migrations from drizzle/. Call it once per process; with PGlite, only in
 * the worker process.
 */
export function openDatabase(config: Pick<ForgeConfig, 'database'>): Promise<ForgeDatabase> {
  const { database } = config;
  return database.kind === 'postgres' ? postgresModule().openPostgres(database.url, database.schema) : openPglite(database.dataDir, database.schema);
}
