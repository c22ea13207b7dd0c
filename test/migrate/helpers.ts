import net from 'node:net';
import { sql } from 'drizzle-orm';
import type { ApplyMigrationInput, ApplyMigrationResult, MigrationActivities } from '../../src/activities/migration-activities';
import type { ForgeDatabase } from '../../src/db';

/** Runs one SQL statement on the database the test's workers hold (in-process, so PGlite too) and returns its rows. */
export async function query<T = Record<string, unknown>>(database: ForgeDatabase, text: string): Promise<T[]> {
  const result = (await database.db.execute(sql.raw(text))) as unknown as { rows: T[] };
  return result.rows;
}

/** Whether a relation exists (to_regclass). */
export async function relationExists(database: ForgeDatabase, name: string): Promise<boolean> {
  const [row] = await query<{ r: string | null }>(database, `SELECT to_regclass('${name}')::text AS r`);
  return row.r !== null;
}

export async function columnExists(database: ForgeDatabase, table: string, column: string): Promise<boolean> {
  const rows = await query(database, `SELECT 1 FROM information_schema.columns WHERE table_name = '${table}' AND column_name = '${column}'`);
  return rows.length > 0;
}

export async function migrationRows(database: ForgeDatabase, name: string) {
  return query<{ name: string; checksum: string; sql: string; workflow_id: string; run_id: string; applied_at: unknown }>(
    database,
    `SELECT * FROM forge_migrations WHERE name = '${name}'`,
  );
}

/**
 * A TCP proxy in front of PostgreSQL that a test can take down (refusing new connections and cutting the open
 * ones, as a database restart does) and bring back on the same port.
 */
export class TcpProxy {
  private server: net.Server | undefined;
  private readonly sockets = new Set<net.Socket>();
  port = 0;

  constructor(
    private readonly targetHost: string,
    private readonly targetPort: number,
  ) {}

  async start(): Promise<void> {
    const server = net.createServer((client) => {
      const upstream = net.connect(this.targetPort, this.targetHost);
      for (const s of [client, upstream]) {
        this.sockets.add(s);
        s.on('close', () => this.sockets.delete(s));
        s.on('error', () => undefined);
      }
      client.pipe(upstream).pipe(client);
      client.on('close', () => upstream.destroy());
      upstream.on('close', () => client.destroy());
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.port, '127.0.0.1', () => resolve());
    });
    this.port = (server.address() as net.AddressInfo).port;
    this.server = server;
  }

  async stop(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    for (const s of this.sockets) s.destroy();
    this.sockets.clear();
    if (server) await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}

/** Polls `check` until it is true or `ms` pass. */
export async function waitUntil(check: () => Promise<boolean>, ms: number, what: string): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/**
 * A migration applied through the activity functions as the workflow runs them, without Temporal: the transaction,
 * then each index on a core table built CONCURRENTLY (PostgreSQL), then the record. Lock waits are not retried here.
 */
export async function applyToTheEnd(
  activities: Pick<MigrationActivities, 'applyMigration' | 'buildCoreIndex' | 'completeMigration'>,
  input: ApplyMigrationInput,
): Promise<ApplyMigrationResult> {
  const applied = await activities.applyMigration(input);
  if (applied.status !== 'applied' || !applied.online?.length) return applied;
  for (const step of applied.online) {
    await activities.buildCoreIndex({ name: input.name, checksum: input.checksum, statementIndex: step.statementIndex });
  }
  await activities.completeMigration({ ...input, statementCount: applied.statementCount });
  return applied;
}
