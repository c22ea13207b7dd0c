import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Client } from 'pg';
import { openPglite } from '../../src/db/pglite';
import { openPostgres } from '../../src/db/postgres';
import type { ForgeDatabase } from '../../src/db/types';

/** One database backend under test: each `open` returns a new handle on the same (per-suite) database. */
export interface TestBackend {
  kind: 'pglite' | 'postgres';
  /** PostgreSQL: the throwaway database's URL, for connections of the test's own (an application's). */
  url?: string;
  open(schema?: string): Promise<ForgeDatabase>;
  /** Deletes the scratch directory or drops the throwaway database. */
  dispose(): Promise<void>;
}

/** /dev/shm keeps PGlite's many small fsyncs off the disk. */
function scratchDir(prefix: string): string {
  const base = existsSync('/dev/shm') ? '/dev/shm' : tmpdir();
  return mkdtempSync(path.join(base, prefix));
}

export function pgliteBackend(): TestBackend {
  const dir = scratchDir('forge-db-test-');
  return {
    kind: 'pglite',
    open: (schema = 'public') => openPglite(path.join(dir, 'pgdata'), schema),
    async dispose() {
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** A throwaway database per suite, created through DATABASE_URL's connection and dropped afterwards. */
export function postgresBackend(adminUrl: string): TestBackend {
  const name = `forge_test_${Date.now().toString(36)}_${randomBytes(4).toString('hex')}`;
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  let created: Promise<void> | undefined;
  const admin = async (statement: string) => {
    const client = new Client({ connectionString: adminUrl });
    await client.connect();
    try {
      await client.query(statement);
    } finally {
      await client.end();
    }
  };
  return {
    kind: 'postgres',
    url: url.toString(),
    async open(schema = 'public') {
      created ??= admin(`CREATE DATABASE "${name}"`);
      await created;
      return openPostgres(url.toString(), schema);
    },
    async dispose() {
      if (!created) return;
      // FORCE ends the sessions still connected, but only those this role may signal: once in CI the drop met a
      // backend of another role on the database (42501; which one was not recorded, a superuser's such as an
      // autovacuum worker would do it). Such a backend is short-lived, so the drop is tried again shortly.
      for (let attempt = 1; ; attempt++) {
        try {
          await admin(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
          return;
        } catch (err) {
          if ((err as { code?: string }).code !== '42501' || attempt >= 10) throw err;
          await new Promise((r) => setTimeout(r, 300));
        }
      }
    },
  };
}

/** PGlite always; PostgreSQL too when DATABASE_URL is set (CI sets it). */
export function backendKinds(): Array<{ kind: 'pglite' | 'postgres'; make: () => TestBackend }> {
  const kinds: Array<{ kind: 'pglite' | 'postgres'; make: () => TestBackend }> = [{ kind: 'pglite', make: pgliteBackend }];
  const url = process.env.DATABASE_URL;
  if (url) kinds.push({ kind: 'postgres', make: () => postgresBackend(url) });
  return kinds;
}

/** Resolves with the first payload on a channel, or rejects after `ms`. */
export function nextNotification(database: ForgeDatabase, channel: string, ms = 5_000): Promise<{ payload: Promise<string>; stop: () => Promise<void> }> {
  let resolve!: (p: string) => void;
  let reject!: (e: Error) => void;
  const payload = new Promise<string>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  const timer = setTimeout(() => reject(new Error(`no notification on ${channel} within ${ms} ms`)), ms);
  return database
    .listen(channel, (p) => {
      clearTimeout(timer);
      resolve(p);
    })
    .then((unlisten) => ({
      payload,
      stop: async () => {
        clearTimeout(timer);
        await unlisten();
      },
    }));
}
