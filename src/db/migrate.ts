import { existsSync } from 'node:fs';
import path from 'node:path';
import { migrate as migratePgliteDb } from 'drizzle-orm/pglite/migrator';
import type { PgliteDatabase } from 'drizzle-orm/pglite';
import { MigrationError } from './errors';

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
export function migrationsSchemaFor(schema: string): string {
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
