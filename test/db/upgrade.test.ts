import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import { drizzle } from 'drizzle-orm/pglite';
import { migrate } from 'drizzle-orm/pglite/migrator';
import { getAgentMigration } from '../../src/db';
import { migrationsFolder } from '../../src/db/migrate';
import { openPglite } from '../../src/db/pglite';

/**
 * An install made before drizzle/0001 (Forge's record of agent migrations was `agent_migrations`, inside the agent
 * namespace) is brought up to date at start, its history kept.
 */
test('an existing install keeps its migration history when agent_migrations becomes forge_migrations', async () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'forge-upgrade-'));
  try {
    // drizzle/ as it was: the first migration only.
    const old = path.join(dir, 'drizzle-0000');
    cpSync(migrationsFolder(), old, { recursive: true });
    const journalFile = path.join(old, 'meta', '_journal.json');
    const journal = JSON.parse(readFileSync(journalFile, 'utf8')) as { entries: { tag: string }[] };
    writeFileSync(journalFile, JSON.stringify({ ...journal, entries: journal.entries.filter((e) => e.tag === '0000_init') }));
    const dataDir = path.join(dir, 'pgdata');
    const pg = new PGlite(dataDir);
    await migrate(drizzle(pg), { migrationsFolder: old, migrationsSchema: 'drizzle' });
    await pg.query(`INSERT INTO agent_migrations (name, checksum, sql, run_id) VALUES ('before', 'abc', 'CREATE TABLE agent_x (id int)', 'r1')`);
    await pg.close();

    const database = await openPglite(dataDir, 'public');
    try {
      expect(await getAgentMigration(database, 'before')).toMatchObject({ name: 'before', checksum: 'abc', runId: 'r1' });
      const { rows } = (await database.db.execute(
        "SELECT to_regclass('agent_migrations') IS NULL AS gone, (SELECT conname FROM pg_constraint WHERE conrelid = 'forge_migrations'::regclass AND contype = 'p') AS pkey",
      )) as unknown as { rows: { gone: boolean; pkey: string }[] };
      expect(rows).toEqual([{ gone: true, pkey: 'forge_migrations_pkey' }]);
    } finally {
      await database.close();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
