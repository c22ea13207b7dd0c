import { mkdtempSync, rmSync } from 'node:fs';
import path from 'node:path';
import { sql } from 'drizzle-orm';
import { openPglite } from '../../src/db/pglite';

/*
 * What keeps the embedded database's memory down (issue 28; the figure itself is worker_rss_idle_mib in the bench):
 * the thread that created a new database (initdb and Forge's tables) ends once it is ready, its memory with it, and
 * the buffer cache is small.
 */
test('a new embedded database is created, then served by a new thread with a 16 MB buffer cache; it reopens alike', async () => {
  const dir = mkdtempSync(path.join('/dev/shm', 'forge-pglite-memory-'));
  try {
    for (const round of ['created', 'reopened']) {
      const database = await openPglite(path.join(dir, 'pgdata'), 'public');
      try {
        const { rows } = (await database.db.execute(sql`SHOW shared_buffers`)) as unknown as { rows: Array<{ shared_buffers: string }> };
        expect({ round, sharedBuffers: rows[0].shared_buffers }).toEqual({ round, sharedBuffers: '16MB' });
        // Forge's own tables are there (the migrations ran on the serving thread).
        const tables = (await database.db.execute(sql`SELECT to_regclass('forge_migrations') IS NOT NULL AS ok`)) as unknown as {
          rows: Array<{ ok: boolean }>;
        };
        expect(tables.rows[0].ok).toBe(true);
      } finally {
        await database.close();
      }
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}, 120_000);
