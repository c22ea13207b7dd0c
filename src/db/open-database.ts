import type { ForgeConfig } from '../config';
import { openPglite } from './pglite';
import { openPostgres } from './postgres';
import type { ForgeDatabase } from './types';

/**
 * Opens Forge's database as configured (PostgreSQL when DATABASE_URL is set, else embedded PGlite under
 * $FORGE_HOME/pgdata) and applies pending migrations from drizzle/. Call it once per process; with PGlite, only in
 * the worker process.
 */
export function openDatabase(config: Pick<ForgeConfig, 'database'>): Promise<ForgeDatabase> {
  const { database } = config;
  return database.kind === 'postgres' ? openPostgres(database.url, database.schema) : openPglite(database.dataDir, database.schema);
}
