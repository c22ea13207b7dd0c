import { randomBytes } from 'node:crypto';
import { loadavg } from 'node:os';
import path from 'node:path';
import { Worker } from 'node:worker_threads';
import { Client } from 'pg';
import type { MigrateSchemaResult } from '../src/contract/migration-runs';
import { quoteIdent } from '../src/db/quote-ident';
import { percentile, round } from './stats';
import { startBenchPlatform, type BenchPlatform } from './platform';
import { nowMs, type WriterMessage, type WriterOptions } from './core-index-writer';
import type { Bench } from './types';

const ROWS = Number(process.env.BENCH_CORE_INDEX_ROWS ?? 2_000_000);
/** Length of the baseline window (and of the window after the build), seconds. */
const WINDOW_S = Number(process.env.BENCH_CORE_INDEX_WINDOW_S ?? 10);
/** The application's writes per second (open loop), on CONNECTIONS connections; every UPDATE_EVERY-th an UPDATE. */
const WRITE_RATE = Number(process.env.BENCH_CORE_INDEX_WRITE_RATE ?? 200);
const CONNECTIONS = 4;
const UPDATE_EVERY = 10;
const WARMUP_MS = 5_000;

/** The application's core table (not `agent_`: the application's own), and the index the agent adds to it. */
const CORE_TABLE = 'orders';
const INDEX = 'agent_orders_customer_idx';
const MIGRATION_SQL = `CREATE INDEX ${INDEX} ON ${CORE_TABLE} (customer_id);\n`;

interface Window {
  label: string;
  start: number;
  end: number;
}

interface WindowStats {
  count: number;
  updates: number;
  p50: number;
  p99: number;
  max: number;
  overLockTimeout: number;
}

/**
 * Issue 27, "How it is shown": an agent's index on a 2M-row core table, applied through the durable path
 * (ForgeClient.migrateSchema → MigrateSchemaWorkflow → the workers) on a real PostgreSQL, while the application
 * writes to that table: no write may wait longer than lock_timeout, and the writes' p99 during the build should stay
 * within 2× their p99 without it (`core_index_build_write_p99_vs_baseline`).
 *
 * A throwaway database of its own on DATABASE_URL's server (created and dropped here), where the bench creates the
 * core table as the application would (its schema's owner, the role Forge connects as) and loads it with one
 * generate_series INSERT. The write load is an open loop (bench/core-index-writer.ts) in a thread of its own, as the
 * application's role: an ordinary login role of its own, granted the table, when DATABASE_SUPERUSER_URL lets the bench
 * create one (dropped at the end); else DATABASE_URL's role, the table's owner. Windows, all in one run: the baseline
 * (no build), the build (migrateSchema's call to its result), and as long as the baseline after it (the new index
 * maintained by every insert; printed, to tell the machine's noise from the build's effect). The migration's result
 * is read for the steps that ran online (`result.online`, once online builds land), pg_stat_progress_create_index
 * for what PostgreSQL actually ran. Without DATABASE_URL it says so and returns no figures.
 *
 * BENCH_CORE_INDEX_ROWS (2000000), BENCH_CORE_INDEX_WINDOW_S (10), BENCH_CORE_INDEX_WRITE_RATE (200/s); the
 * FORGE_MIGRATION_* limits are passed on to the platform.
 */
export const coreIndexBench: Bench = {
  name: 'core-index',
  description: `an agent index on a ${(ROWS / 1e6).toString()}M-row core table under the application's writes (${WRITE_RATE}/s, real PostgreSQL)`,
  async run(): Promise<Record<string, number>> {
    const url = process.env.DATABASE_URL;
    if (!url) {
      console.log('skipped: this benchmark needs PostgreSQL (set DATABASE_URL to a role that can CREATE DATABASE); no figures');
      return {};
    }
    const dbName = `forge_bench_core_index_${process.pid}_${randomBytes(3).toString('hex')}`;
    const admin = new Client({ connectionString: url });
    await admin.connect();
    let superuserClient: Client | undefined;
    let appRole: string | undefined;
    let dbCreated = false;
    let platform: BenchPlatform | undefined;
    let observer: Client | undefined;
    let writer: Worker | undefined;
    try {
      const [{ role, superuser }] = (
        await admin.query<{ role: string; superuser: boolean }>('SELECT current_user AS role, rolsuper AS superuser FROM pg_roles WHERE rolname = current_user')
      ).rows;
      if (superuser) {
        // Forge would run the agent's SQL as forge_agent, which owns no application table and so cannot index one.
        console.log(`skipped: DATABASE_URL's role ${role} is a superuser; connect as the ordinary role that owns the application's schema; no figures`);
        return {};
      }
      try {
        await admin.query(`CREATE DATABASE ${quoteIdent(dbName)}`);
      } catch (err) {
        if ((err as { code?: string }).code !== '42501') throw err;
        console.log(`skipped: DATABASE_URL's role ${role} cannot CREATE DATABASE (the bench works in a throwaway database of its own); no figures`);
        return {};
      }
      dbCreated = true;
      const dbUrl = withDatabase(url, dbName);
      let appUrl = dbUrl;

      // The application's schema, as its own migrations would make it: Forge's schema (public), its role the owner.
      const owner = new Client({ connectionString: dbUrl });
      await owner.connect();
      try {
        const loaded = performance.now();
        await owner.query(`CREATE TABLE ${CORE_TABLE} (
          id bigserial PRIMARY KEY,
          customer_id bigint NOT NULL,
          status text NOT NULL,
          total_cents bigint NOT NULL,
          placed_at timestamptz NOT NULL DEFAULT now()
        )`);
        await owner.query(
          `INSERT INTO ${CORE_TABLE} (customer_id, status, total_cents, placed_at)
           SELECT (random() * 100000)::bigint, (ARRAY['new', 'paid', 'shipped', 'done'])[1 + g % 4], (random() * 100000)::bigint,
                  now() - g * interval '1 second'
           FROM generate_series(1, $1::int) AS g`,
          [ROWS],
        );
        const insertedMs = performance.now() - loaded;
        // Hint bits and statistics now, so that neither autovacuum nor the first scan does it during a window.
        await owner.query(`VACUUM (ANALYZE) ${CORE_TABLE}`);
        const size = (await owner.query<{ size: string }>(`SELECT pg_size_pretty(pg_total_relation_size('${CORE_TABLE}')) AS size`)).rows[0].size;
        console.log(
          `core table ${CORE_TABLE} in throwaway database ${dbName}: ${ROWS} rows (${size}) inserted in ${round(insertedMs / 1000, 1)} s, ` +
            `vacuumed in ${round((performance.now() - loaded - insertedMs) / 1000, 1)} s`,
        );
        const superuserUrl = process.env.DATABASE_SUPERUSER_URL;
        if (superuserUrl) {
          const name = `forge_bench_app_${randomBytes(4).toString('hex')}`;
          const password = randomBytes(16).toString('hex');
          superuserClient = new Client({ connectionString: superuserUrl });
          await superuserClient.connect();
          await superuserClient.query(`CREATE ROLE ${quoteIdent(name)} LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOBYPASSRLS PASSWORD '${password}'`);
          appRole = name;
          await owner.query(`GRANT USAGE ON SCHEMA public TO ${quoteIdent(name)}`);
          await owner.query(`GRANT SELECT, INSERT, UPDATE ON ${CORE_TABLE} TO ${quoteIdent(name)}`);
          await owner.query(`GRANT USAGE ON SEQUENCE ${CORE_TABLE}_id_seq TO ${quoteIdent(name)}`);
          appUrl = withRole(dbUrl, name, password);
        }
      } finally {
        await owner.end();
      }

      // No sandbox spares: no tool runs here, and their start would land in the baseline window. The migration limits
      // (FORGE_MIGRATION_*: lock_timeout, statement_timeout) are the caller's, when set.
      const limits = Object.fromEntries(
        Object.entries(process.env).filter((e): e is [string, string] => e[0].startsWith('FORGE_MIGRATION_') && e[1] !== undefined),
      );
      platform = await startBenchPlatform('core-index', { ...limits, DATABASE_URL: dbUrl, FORGE_SCHEMA: 'public', FORGE_SANDBOX_SPARES: '0' });
      const { forge, config } = platform;
      const lockTimeoutMs = config.migrations.lockTimeoutMs;
      console.log(`Forge on PostgreSQL (${dbName}), as ${role}; migration limits ${JSON.stringify(config.migrations)}`);

      const options: WriterOptions = {
        url: appUrl,
        table: `public.${quoteIdent(CORE_TABLE)}`,
        rate: WRITE_RATE,
        connections: CONNECTIONS,
        updateEvery: UPDATE_EVERY,
        maxId: ROWS,
      };
      writer = new Worker(path.join(__dirname, 'core-index-writer.js'), { workerData: options });
      const messages = writerMessages(writer);
      const ready = await messages.next();
      if (ready.kind !== 'ready') throw new Error(`the write loop did not start: ${ready.kind === 'failed' ? ready.message : ready.kind}`);
      if (ready.superuser) throw new Error(`the application's role ${ready.role} is a superuser: it must be an ordinary role`);
      console.log(
        `application: role ${ready.role} (${appRole ? 'granted SELECT, INSERT, UPDATE on the table' : "the table's owner; set DATABASE_SUPERUSER_URL for a role of its own"}), ` +
          `${WRITE_RATE} writes/s open loop on ${CONNECTIONS} connections, 1 in ${UPDATE_EVERY} an UPDATE`,
      );

      await sleep(WARMUP_MS);
      const windows: Window[] = [];
      const baseline: Window = { label: 'baseline (no build)', start: nowMs(), end: 0 };
      await sleep(WINDOW_S * 1000);
      baseline.end = nowMs();
      windows.push(baseline);

      observer = new Client({ connectionString: dbUrl });
      await observer.connect();
      const watch = watchBuild(observer);
      const build: Window = { label: 'during the build', start: nowMs(), end: 0 };
      let result: MigrateSchemaResult;
      try {
        result = await forge.migrateSchema({ name: 'core_index_build', sql: MIGRATION_SQL });
      } finally {
        build.end = nowMs();
      }
      const seen = await watch.stop();
      windows.push(build);
      if (result.status !== 'applied') {
        throw new Error(`the migration did not apply: ${result.status}: ${result.message} ${JSON.stringify(result.error ?? result.statements ?? '')}`);
      }
      await sleep(1_000);
      const after: Window = { label: 'after the build', start: nowMs(), end: 0 };
      await sleep(WINDOW_S * 1000);
      after.end = nowMs();
      windows.push(after);

      writer.postMessage('stop');
      const done = await messages.next();
      await writer.terminate();
      writer = undefined;
      if (done.kind !== 'done') throw new Error(`the write loop failed: ${done.kind === 'failed' ? done.message : done.kind}`);
      if (done.errors.length > 0) console.log(`write errors (first ${done.errors.length}): ${[...new Set(done.errors)].join(' | ')}`);

      const stats = windows.map((w) => ({ w, s: windowStats(done.samples, w, lockTimeoutMs) }));
      for (const { w, s } of stats) {
        console.log(
          `${w.label.padEnd(22)} ${round((w.end - w.start) / 1000, 1)
            .toString()
            .padStart(5)} s  ${String(s.count).padStart(5)} writes ` +
            `(${s.updates} updates)  p50 ${fmt(s.p50)} ms  p99 ${fmt(s.p99)} ms  max ${fmt(s.max)} ms  over lock_timeout ${s.overLockTimeout}`,
        );
      }
      const [base, during] = [stats[0].s, stats[1].s];
      const ratio = round(during.p99 / base.p99);
      const online = onlineOf(result);
      const valid = (await observer.query<{ valid: boolean }>(`SELECT indisvalid AS valid FROM pg_index WHERE indexrelid = to_regclass($1)`, [INDEX])).rows[0]
        ?.valid;
      const buildMs = seen.firstMs !== undefined ? seen.lastMs! - seen.firstMs : undefined;
      console.log(
        `build: migrateSchema ${round((build.end - build.start) / 1000, 2)} s (client → applied); the index build seen in ` +
          `pg_stat_progress_create_index for ${buildMs === undefined ? '?' : `${round(buildMs / 1000, 2)} s`} as ` +
          `${seen.commands.size ? [...seen.commands].join(', ') : '(never seen)'}; phases ${[...seen.phases].join(' → ') || '-'}; ` +
          `at most ${seen.maxWaiting} session(s) waiting on a lock of ${CORE_TABLE} at once; index valid: ${String(valid)}`,
      );
      console.log(
        `stages: ${result.stages.map((s) => `${s.name} ${s.status}${s.durationMs !== undefined ? ` ${s.durationMs} ms` : ''}${s.summary ? ` (${s.summary})` : ''}`).join('; ')}`,
      );
      console.log(`online: ${online.text}`);
      console.log(
        `load average at the end: ${loadavg()
          .map((l) => round(l, 1))
          .join(', ')}`,
      );
      const noise = Math.max(base.p99, stats[2].s.p99) / Math.min(base.p99, stats[2].s.p99);
      if (noise > 2) {
        console.log(
          `note: the two windows without a build differ by ${round(noise, 1)}× in p99 (${fmt(base.p99).trim()} vs ${fmt(stats[2].s.p99).trim()} ms): ` +
            "the machine's own noise is as large as the effect measured; run it again",
        );
      }
      console.log(
        `write p99 during the build / baseline: ${ratio}× (goal ≤ 2); max write ${fmt(during.max)} ms vs lock_timeout ${lockTimeoutMs} ms: ` +
          `${during.max <= lockTimeoutMs ? 'never longer' : `${during.overLockTimeout} write(s) longer`}`,
      );
      return {
        core_index_build_write_p99_ms: round(during.p99, 1),
        core_index_build_write_p99_baseline_ms: round(base.p99, 1),
        core_index_build_write_p99_vs_baseline: ratio,
        core_index_build_write_p50_ms: round(during.p50, 1),
        core_index_build_write_p50_baseline_ms: round(base.p50, 1),
        core_index_build_write_max_ms: round(during.max, 1),
        core_index_build_write_p99_after_ms: round(stats[2].s.p99, 1),
        core_index_build_duration_ms: round(buildMs ?? build.end - build.start, 0),
        core_index_build_online: online.said ? 1 : 0,
      };
    } finally {
      if (writer) await writer.terminate().catch(() => undefined);
      await observer?.end().catch(() => undefined);
      await platform?.stop().catch((err: unknown) => console.log(`platform stop: ${String(err)}`));
      if (dbCreated)
        await admin.query(`DROP DATABASE IF EXISTS ${quoteIdent(dbName)} WITH (FORCE)`).catch((err: unknown) => console.log(`drop ${dbName}: ${String(err)}`));
      await admin.end().catch(() => undefined);
      if (superuserClient) {
        if (appRole)
          await superuserClient
            .query(`DROP ROLE IF EXISTS ${quoteIdent(appRole)}`)
            .catch((err: unknown) => console.log(`drop role ${appRole}: ${String(err)}`));
        await superuserClient.end().catch(() => undefined);
      }
    }
  },
};

/** `url` with its database replaced. */
function withDatabase(url: string, database: string): string {
  const u = new URL(url);
  u.pathname = `/${database}`;
  return u.toString();
}

/** `url` with its user and password replaced. */
function withRole(url: string, user: string, password: string): string {
  const u = new URL(url);
  u.username = user;
  u.password = password;
  return u.toString();
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
const fmt = (ms: number) => round(ms, 1).toString().padStart(7);

/** The writer's messages, one at a time, in order. */
function writerMessages(worker: Worker): { next(): Promise<WriterMessage> } {
  const queue: WriterMessage[] = [];
  const waiting: Array<(m: WriterMessage) => void> = [];
  const push = (m: WriterMessage) => {
    const w = waiting.shift();
    if (w) w(m);
    else queue.push(m);
  };
  worker.on('message', (m: WriterMessage) => push(m));
  worker.on('error', (err) => push({ kind: 'failed', message: err.message }));
  worker.on('exit', (code) => push({ kind: 'failed', message: `the write loop's thread exited (${code})` }));
  return { next: () => (queue.length > 0 ? Promise.resolve(queue.shift()!) : new Promise((r) => waiting.push(r))) };
}

/** p50/p99/max of the writes scheduled in `w` (latency from their scheduled time), and how many waited past `limit`. */
function windowStats(samples: Float64Array, w: Window, limitMs: number): WindowStats {
  const latencies: number[] = [];
  let updates = 0;
  for (let i = 0; i < samples.length; i += 3) {
    if (samples[i] < w.start || samples[i] >= w.end) continue;
    latencies.push(samples[i + 1]);
    updates += samples[i + 2];
  }
  return {
    count: latencies.length,
    updates,
    p50: percentile(latencies, 50),
    p99: percentile(latencies, 99),
    max: latencies.reduce((a, b) => Math.max(a, b), 0),
    overLockTimeout: latencies.filter((l) => l > limitMs).length,
  };
}

/**
 * Watches the build from the database side while it runs: pg_stat_progress_create_index (which command, which
 * phases, from when to when; Forge's role sees its own sessions in full) and how many sessions wait on a lock of the
 * core table at once. Polls every 20 ms until stop().
 */
function watchBuild(client: Client): {
  stop(): Promise<{ commands: Set<string>; phases: Set<string>; firstMs?: number; lastMs?: number; maxWaiting: number }>;
} {
  const seen = {
    commands: new Set<string>(),
    phases: new Set<string>(),
    firstMs: undefined as number | undefined,
    lastMs: undefined as number | undefined,
    maxWaiting: 0,
  };
  let stopping = false;
  const loop = (async () => {
    while (!stopping) {
      const { rows } = await client.query<{ command: string | null; phase: string | null; waiting: number }>(
        `SELECT p.command, p.phase,
                (SELECT count(*)::int FROM pg_locks l WHERE NOT l.granted AND l.relation = to_regclass($1)) AS waiting
         FROM (SELECT 1) AS one LEFT JOIN pg_stat_progress_create_index p ON p.relid = to_regclass($1)`,
        [CORE_TABLE],
      );
      const t = nowMs();
      for (const r of rows) {
        seen.maxWaiting = Math.max(seen.maxWaiting, r.waiting);
        if (r.command === null) continue;
        seen.firstMs ??= t;
        seen.lastMs = t;
        seen.commands.add(r.command);
        if (r.phase) seen.phases.add(r.phase);
      }
      await sleep(20);
    }
  })();
  return {
    async stop() {
      stopping = true;
      await loop.catch(() => undefined);
      return seen;
    },
  };
}

/**
 * Whether the result says the index was built online. Today's MigrateSchemaResult has no such field (the index is
 * built inside the migration's transaction); once online builds land it carries one, read defensively here: a
 * boolean, a list of the steps that ran online, or an object naming them.
 */
function onlineOf(result: MigrateSchemaResult): { said: boolean; text: string } {
  const fields = Object.entries(result as unknown as Record<string, unknown>).filter(([key]) => /online/i.test(key));
  if (fields.length === 0) return { said: false, text: 'the result has no `online` field (built inside the migration transaction)' };
  const text = fields.map(([key, value]) => `${key}: ${JSON.stringify(value)}`).join(', ');
  // A boolean; or a list or a map of the steps that ran online (this migration has one step that can: the index).
  const said = fields.some(([, value]) =>
    Array.isArray(value) ? value.length > 0 : value && typeof value === 'object' ? Object.keys(value).length > 0 : Boolean(value),
  );
  return { said, text };
}
