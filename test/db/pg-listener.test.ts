import { Client } from 'pg';
import type { ForgeDatabase } from '../../src/db/types';
import { postgresBackend, type TestBackend } from './backends';
import { describeIf } from '../helpers/skip';

// Losing the LISTEN connection only exists on a real server; PGlite runs in-process. CI sets DATABASE_URL.
const onPostgres = describeIf(process.env.DATABASE_URL, 'DATABASE_URL is not set (PostgreSQL only; CI sets it)');

onPostgres('PostgreSQL listener connection', () => {
  let backend: TestBackend;
  let database: ForgeDatabase;

  beforeAll(async () => {
    backend = postgresBackend(process.env.DATABASE_URL as string);
    database = await backend.open();
  });

  afterAll(async () => {
    await database?.close();
    await backend?.dispose();
  });

  test('after the server drops it, the listener reconnects, says so, and hears notifications again', async () => {
    const heard: string[] = [];
    await database.listen('forge_reconnect_test', (p) => heard.push(p));
    const reconnected = new Promise<void>((resolve) => database.onListenerReconnect(resolve));

    const admin = new Client({ connectionString: process.env.DATABASE_URL });
    await admin.connect();
    try {
      const { rowCount } = await admin.query(
        `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
          WHERE pid <> pg_backend_pid() AND query ILIKE 'LISTEN "forge_reconnect_test"%'`,
      );
      expect(rowCount).toBe(1);
    } finally {
      await admin.end();
    }

    await reconnected;
    await database.notify('forge_reconnect_test', 'after');
    const deadline = Date.now() + 5_000;
    while (!heard.includes('after') && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    expect(heard).toContain('after');
  });
});
