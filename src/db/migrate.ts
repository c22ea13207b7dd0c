import { existsSync } from 'node:fs';
import path from 'node:path';
import { migrate as migratePg } from 'drizzle-orm/node-postgres/migrator';
import { drizzle as drizzlePg } from 'drizzle-orm/node-postgres';
import { migrate as migratePgliteDb } from 'drizzle-orm/pglite/migrator';
import type { PgliteDatabase } from 'drizzle-orm/pglite';
import type { PoolClient } from 'pg';
import { ensureAgentRole } from './agent-role';
import { MigrationError } from './errors';

// Any constant works; it only has to be the same in every Forge process that migrates one database.
const MIGRATION_LOCK_KEY = 0x466f7267; // "Forg"

/**
 * The committed drizzle-kit output (drizzle/ at the package root). Found by walking up from this file, so it works
 * from src/ under ts-jest and from dist/src/ after the build.
 */
export function migrationsFolder(): string {
  let dir = __dirname;
  for (;;) {
    const candidate = path.join(dir, 'drizzle');
    if (existsSync(path.join(candidate, 'meta', '_journal.json'))) return candidate;
    const parent = path.dirname(dir);
    if (parent === dir) throw new MigrationError(`No drizzle/meta/_journal.json found above ${__dirname}.`);
    dir = parent;
  }
}

/** Where drizzle records which migrations ran: its usual `drizzle` schema, or Forge's own when FORGE_SCHEMA is set. */
function migrationsSchemaFor(schema: string): string {
  return schema === 'public' ? 'drizzle' : schema;
}

/** Applies pending migrations on PGlite (one process, so no lock is needed). The caller sets search_path. */
export async function migratePglite(db: PgliteDatabase<Record<string, unknown>>, schema: string): Promise<void> {
  try {
    await migratePgliteDb(db, { migrationsFolder: migrationsFolder(), migrationsSchema: migrationsSchemaFor(schema) });
  } catch (err) {
    throw err instanceof MigrationError ? err : new MigrationError(`Migrating PGlite failed: ${String(err)}`, { cause: err });
  }
}

/**
 * Applies pending migrations on PostgreSQL under a session advisory lock, so workers starting together do not race
 * (drizzle's migrator reads the last applied migration outside its transaction), then makes sure the role agent
 * migrations run under exists where Forge can create it (agent-role.ts).
 */
export async function migratePostgres(client: PoolClient, schema: string): Promise<void> {
  try {
    await client.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK_KEY]);
    try {
      if (schema !== 'public') await client.query(`CREATE SCHEMA IF NOT EXISTS "${schema}"`);
      await migratePg(drizzlePg(client), {
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
