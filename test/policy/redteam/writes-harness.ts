/**
 * The world of the write differential (writes.test.ts, issue 27): a PostgreSQL cluster of the test's own (initdb into
 * /dev/shm, a free port; optionally with its clock a year ahead through libfaketime), Forge's tables made by Forge's
 * own migrations, the core fixture owned by the application's owner, a few hundred ordinary rows in every core table,
 * and the APPLICATION's role: a plain login role that owns nothing and was granted what an application is granted
 * (USAGE on the schema, SELECT/INSERT/UPDATE/DELETE on the core tables and views, USAGE on the core sequences).
 *
 * Two ways Forge meets the application's tables (README, "The database as a second wall"):
 *  - `ordinary`: Forge connects as `forge`, an ordinary role that owns the schema and the application's tables;
 *  - `superuser`: Forge connects as the superuser and runs agent SQL as `forge_agent`; the tables are owned by
 *    `app_owner`, granted to `forge_agent` as the README says.
 * Either way the role that writes is neither Forge's nor the owner: `app_writer`.
 *
 * A case is applied as Forge applies it ({@link applyLikeTheWorkflow}); then every write of app-writes.ts runs again
 * as `app_writer` and is compared with the baseline recorded before any case: the same success or failure (and
 * SQLSTATE), and a time within the bound ({@link TIMING}). The agent's objects are dropped afterwards
 * (catalog.ts CLEANUP_SQL, as the superuser); a case that changed anything is followed by a fresh copy of the
 * database from its template, so no case meets what another left behind.
 */
import { chmodSync, existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Client } from 'pg';
import type { ApplyMigrationInput, ApplyMigrationResult } from '../../../src/activities/migration-activities';
import type { ForgeDatabase, MigrationLimits } from '../../../src/db';
import { openPostgres } from '../../../src/db/postgres';
import { migrationChecksum } from '../../../src/policy';
import { PrivatePostgres, postgresBinDir } from '../../chaos/private-postgres';
import { describeOutcome, generateWrites, readCoreTables, readSampleRows, runWrite, seedSql, type CoreTable, type Outcome, type Write } from './app-writes';
import { CLEANUP_SQL } from './catalog';
import { applyToTheEnd } from '../../migrate/helpers';
import { classifyFailure, describeApply, type ActivitiesFactory, type ApplyOutcome } from './harness';

export { describeApply, type ApplyOutcome };

export { postgresBinDir };

const SCHEMA = 'public';
const APP_ROLE = 'app_writer';
const OWNER_ROLE = 'app_owner';
const TEMPLATE_DB = 'forge_writes_template';
/** Rows committed into every core table before the baseline, so updates of "every row" and index builds meet data. */
const SEED_ROWS = 200;
/** A migration that has not ended by then is reported as hung (its own timeouts should end it long before). */
const APPLY_DEADLINE_MS = 60_000;
/** The application's own statement timeout: a write this slow is cut off (and differs from its baseline). */
const APP_STATEMENT_TIMEOUT_MS = 5_000;
/** A write with no answer at all by then (a server clock whose timeouts misfire, a lock no one releases). */
const WRITE_DEADLINE_MS = 20_000;

/**
 * The timing bound. A write is slow when it takes longer than max(FLOOR_MS, FACTOR × its baseline median) on its
 * first run AND on each of RETRY_PAUSES_MS.length runs again after those pauses.
 *
 * Why these numbers: the baseline writes take 0.2–30 ms (1 MB values and the 1,000-row insert are the slow end), and
 * what the issue's attacks cost is 2–5 s per write; a partial index or default that costs even 0.1 ms per row shows
 * as +100 ms on the 1,000-row insert. A single run on a 2-core machine shared with other suites (jest workers,
 * Temporal servers, three PostgreSQL clusters, tsc) stalls for tens of milliseconds now and then and for a few hundred
 * at worst, so one slow run proves nothing: the write is run again after 0.25 s, 1 s and 2 s, and counts as slow only
 * if all four runs are over the bound. A load spike would have to last the whole 3.25 s and hit the same write four
 * times; a real cost does it every time. The factor 5 leaves room for legitimate agent work (up to 8 more indexes to
 * maintain per insert roughly doubles the 1,000-row insert).
 */
export const TIMING = { FLOOR_MS: 100, FACTOR: 5, RETRY_PAUSES_MS: [250, 1_000, 2_000] };
/** After this many differences a case's remaining writes are not run (the case has failed; more is detail). */
const MAX_DIFFERENCES = 5;

export interface WriteDifference {
  write: Write;
  before: Outcome;
  after: Outcome;
  /** For a write that was slow: every run's time and the bound. */
  slow?: { runs: number[]; boundMs: number };
}

export interface WorldRun {
  world: string;
  apply: ApplyOutcome;
  differences: WriteDifference[];
  /** Writes not run because MAX_DIFFERENCES was reached. */
  notRun: number;
  notes: string[];
  writesMs: number;
  ms: number;
}

export interface WorldOptions {
  /** Names the world in messages: `clock now, Forge as an ordinary role`. */
  label: string;
  mode: 'ordinary' | 'superuser';
  /**
   * The server's clock while the application writes, as libfaketime's offset (`+365d`); the migration is applied,
   * and the world cleaned up, at the true time. Needs `libfaketime`.
   */
  clockAhead?: string;
  /** libfaketime's preload library ({@link findLibfaketime}). */
  libfaketime?: string;
  /** Settings of the application's sessions (DateStyle, TimeZone, ...): an application's sessions are not Forge's. */
  appSettings?: Record<string, string>;
  fixtureSql: string;
  limits: MigrationLimits;
  createActivities: ActivitiesFactory;
  log?: (message: string) => void;
}

/** libfaketime's preload library, from Debian's `libfaketime` package (or a usual place), or undefined. */
export function findLibfaketime(): string | undefined {
  const candidates = ['/usr/lib/faketime/libfaketime.so.1', '/usr/local/lib/faketime/libfaketime.so.1'];
  try {
    for (const dir of readdirSync('/usr/lib')) candidates.push(path.join('/usr/lib', dir, 'faketime', 'libfaketime.so.1'));
  } catch {
    // no /usr/lib: nothing to find
  }
  return candidates.find((c) => existsSync(c));
}

type WorkflowActivities = Parameters<typeof applyToTheEnd>[0];

/**
 * A migration applied as MigrateSchemaWorkflow applies it, without Temporal (test/migrate/helpers.ts applyToTheEnd:
 * the transaction, each core-table index built CONCURRENTLY, the record), with the number of online builds.
 */
async function applyLikeTheWorkflow(activities: WorkflowActivities, input: ApplyMigrationInput): Promise<{ result: ApplyMigrationResult; online: number }> {
  const result = await applyToTheEnd(activities, input);
  return { result, online: result.online?.length ?? 0 };
}

export function describeDifference(d: WriteDifference): string {
  const what = d.slow
    ? `slow: ${d.slow.runs.map((r) => `${Math.round(r)} ms`).join(', ')} against a bound of ${Math.round(d.slow.boundMs)} ms (baseline ${d.before.ms} ms)`
    : `before: ${describeOutcome(d.before)}; after: ${describeOutcome(d.after)}`;
  const sql = d.write.sql.length > 160 ? `${d.write.sql.slice(0, 160)} … (${d.write.sql.length} characters)` : d.write.sql;
  return `${d.write.id}\n      ${what}\n      SQL: ${sql.replace(/\n/g, ' ')}`;
}

const sameOutcome = (a: Outcome, b: Outcome) => a.ok === b.ok && (a.ok || b.ok || a.code === b.code);
const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Baseline {
  outcome: Outcome;
  medianMs: number;
}

export class WriteWorld {
  private pg!: PrivatePostgres;
  private database: ForgeDatabase | undefined;
  private activities!: WorkflowActivities;
  private app: Client | undefined;
  private admin: Client | undefined;
  private workDb = '';
  private generation = 0;
  private seq = 0;
  /** Forge's own tables: whatever Forge's migrations made, read before the fixture is loaded. */
  private forgeTables: string[] = [];
  tables: CoreTable[] = [];
  writes: Write[] = [];
  private baseline = new Map<string, Baseline>();
  readonly timing = { setupMs: 0, cases: 0, applyMs: 0, writesMs: 0, cleanupMs: 0, rebuilds: 0, retries: 0 };

  /** libfaketime's timestamp file (its spec is read at every clock call: FAKETIME_NO_CACHE), when the clock moves. */
  private clockDir: string | undefined;

  private constructor(private readonly opts: WorldOptions) {}

  get label(): string {
    return this.opts.label;
  }

  static async open(opts: WorldOptions): Promise<WriteWorld> {
    const world = new WriteWorld(opts);
    const started = performance.now();
    try {
      await world.setUp();
    } catch (err) {
      await world.close();
      throw err;
    }
    world.timing.setupMs = Math.round(performance.now() - started);
    return world;
  }

  private log(message: string): void {
    this.opts.log?.(`[${this.opts.label}] ${message}`);
  }

  private url(user: string, db: string): string {
    return `postgres://${user}${user === 'forge' ? ':forge' : ''}@127.0.0.1:${this.pg.port}/${db}`;
  }

  /** Forge's role in this world's mode: the one its pool connects as. */
  private get forgeUser(): string {
    return this.opts.mode === 'ordinary' ? 'forge' : 'postgres';
  }

  private async connect(user: string, db: string, settings: Record<string, string> = {}): Promise<Client> {
    const options = Object.entries(settings)
      .map(([k, v]) => `-c ${k}=${v.replace(/([ \\])/g, '\\$1')}`)
      .join(' ');
    const client = new Client({ connectionString: this.url(user, db), application_name: `forge-writes-${user}`, ...(options ? { options } : {}) });
    client.on('error', () => undefined); // a lost connection shows on the next query
    await client.connect();
    return client;
  }

  /**
   * The server's environment. A clock that moves is libfaketime reading its offset from a file at every call: the
   * offset changes between the apply and the writes without a restart. (With a fixed FAKETIME the migration itself
   * would run a year ahead, and a time bomb would go off while it is applied instead of afterwards. At offset +0
   * timeouts behave as usual; ahead, a timeout that expires while a backend sleeps is not honoured, since libfaketime
   * stops faking inside its epoll_wait wrapper, where the SIGALRM handler runs: the writes' timeouts are CPU-bound
   * and the harness has its own deadline.)
   */
  private serverEnv(): Record<string, string> {
    if (!this.opts.clockAhead) return {};
    if (!this.opts.libfaketime) throw new Error('a clock ahead needs libfaketime');
    const base = existsSync('/dev/shm') ? '/dev/shm' : tmpdir();
    // Ours, readable by the server's user, owned by no one the red-team differential test watches.
    this.clockDir = mkdtempSync(path.join(base, 'forge-writes-clock-'));
    chmodSync(this.clockDir, 0o755);
    writeFileSync(this.clockFile, '+0\n', { mode: 0o644 });
    return { LD_PRELOAD: this.opts.libfaketime, FAKETIME_TIMESTAMP_FILE: this.clockFile, FAKETIME_NO_CACHE: '1' };
  }

  private get clockFile(): string {
    return path.join(this.clockDir ?? '', 'faketime');
  }

  /** Sets the server's clock (no-op without a clock ahead) and checks that the server reads it. */
  private async setClock(which: 'true time' | 'ahead'): Promise<void> {
    if (!this.opts.clockAhead) return;
    const spec = which === 'ahead' ? this.opts.clockAhead : '+0';
    writeFileSync(this.clockFile, `${spec}\n`);
    const client = this.admin ?? (await this.connect('postgres', 'postgres'));
    try {
      const [{ days }] = (
        await client.query<{ days: number }>('SELECT extract(epoch FROM now() - $1::timestamptz) / 86400 AS days', [new Date().toISOString()])
      ).rows;
      const expected = which === 'ahead' ? Number(/^\+(\d+)d$/.exec(spec)?.[1] ?? NaN) : 0;
      if (!(Math.abs(Number(days) - expected) < 1))
        throw new Error(`the server's clock is ${Number(days).toFixed(2)} days off, not ${expected} (libfaketime spec ${spec})`);
    } finally {
      if (client !== this.admin) await client.end();
    }
  }

  private async setUp(): Promise<void> {
    this.pg = await PrivatePostgres.start(postgresBinDir(), this.serverEnv());
    const su = await this.connect('postgres', 'postgres');
    try {
      const [{ now }] = (await su.query<{ now: string }>("SELECT to_char(now(), 'YYYY-MM-DD HH24:MI:SS TZ') AS now")).rows;
      this.log(`cluster on port ${this.pg.port}, server clock ${now}`);
      await su.query(`CREATE ROLE ${APP_ROLE} LOGIN`);
      if (this.opts.mode === 'ordinary') await su.query(`CREATE DATABASE ${TEMPLATE_DB} OWNER forge`);
      else {
        await su.query(`CREATE ROLE ${OWNER_ROLE} NOLOGIN`);
        await su.query(`CREATE DATABASE ${TEMPLATE_DB}`);
      }
    } finally {
      await su.end();
    }
    // Forge's own tables, by Forge's own migrations (and, as a superuser, its forge_agent role).
    const forge = await openPostgres(this.url(this.forgeUser, TEMPLATE_DB), SCHEMA);
    await forge.close();

    const owner = await this.connect('postgres', TEMPLATE_DB);
    try {
      this.forgeTables = (
        await owner.query<{ name: string }>(`SELECT relname AS name FROM pg_class WHERE relnamespace = $1::regnamespace AND relkind IN ('r', 'p')`, [SCHEMA])
      ).rows.map((r) => r.name);
      if (this.opts.mode === 'ordinary') {
        await owner.query('SET ROLE forge');
      } else {
        await owner.query(`GRANT CREATE ON SCHEMA ${SCHEMA} TO ${OWNER_ROLE}; SET ROLE ${OWNER_ROLE}`);
      }
      await owner.query(this.opts.fixtureSql);
      await owner.query('RESET ROLE');
      if (this.opts.mode === 'superuser') await owner.query(`GRANT ${OWNER_ROLE} TO forge_agent`);

      this.tables = await readCoreTables(owner, SCHEMA, this.forgeTables);
      if (this.tables.length === 0) throw new Error('the fixture has no core table');
      await readSampleRows(owner, SCHEMA, this.tables);
      // What an application's role is granted: its tables, views and sequences; nothing of Forge's, nothing to own.
      const relations = (
        await owner.query<{ q: string; kind: string }>(
          `SELECT format('%I.%I', n.nspname, c.relname) AS q, c.relkind::text AS kind FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
            WHERE n.nspname = $1 AND c.relkind IN ('r', 'p', 'v', 'm', 'S') AND NOT starts_with(c.relname, 'agent_')
              AND NOT (c.relname = ANY ($2)) AND NOT EXISTS (SELECT 1 FROM pg_depend d JOIN pg_class t ON t.oid = d.refobjid
                WHERE d.objid = c.oid AND d.deptype IN ('a', 'i') AND t.relname = ANY ($2))`,
          [SCHEMA, this.forgeTables],
        )
      ).rows;
      const grants = [`GRANT USAGE ON SCHEMA ${SCHEMA} TO ${APP_ROLE}`];
      for (const r of relations) {
        grants.push(r.kind === 'S' ? `GRANT USAGE, SELECT ON SEQUENCE ${r.q} TO ${APP_ROLE}` : `GRANT SELECT, INSERT, UPDATE, DELETE ON ${r.q} TO ${APP_ROLE}`);
      }
      await owner.query(grants.join(';\n'));
      for (const t of this.tables) {
        const seed = seedSql(t, SCHEMA, SEED_ROWS);
        if (seed) await owner.query(`SET ROLE ${this.opts.mode === 'ordinary' ? 'forge' : OWNER_ROLE}; ${seed}; RESET ROLE`);
      }
      await owner.query('VACUUM ANALYZE');
    } finally {
      await owner.end();
    }
    const generated = generateWrites(this.tables, SCHEMA);
    this.writes = generated.writes;
    for (const note of generated.notes) this.log(note);
    this.log(
      `${this.tables.length} core table(s) (${this.tables.map((t) => `${t.name}: ${t.columns.length} columns`).join(', ')}), ${this.writes.length} writes`,
    );

    await this.openWork();
    await this.setClock('ahead');
    await this.recordBaseline();
  }

  /** A new working copy of the template and Forge's pool, the application's and the superuser's connections on it. */
  private async openWork(): Promise<void> {
    await this.closeWork();
    const name = `forge_writes_${++this.generation}`;
    const su = await this.connect('postgres', 'postgres');
    try {
      await su.query(`CREATE DATABASE ${name} TEMPLATE ${TEMPLATE_DB}${this.opts.mode === 'ordinary' ? ' OWNER forge' : ''}`);
    } finally {
      await su.end();
    }
    this.workDb = name;
    this.database = await openPostgres(this.url(this.forgeUser, name), SCHEMA);
    this.activities = this.opts.createActivities({ database: this.database, schema: SCHEMA, limits: this.opts.limits }) as WorkflowActivities;
    this.admin = await this.connect('postgres', name);
    this.app = await this.connect(APP_ROLE, name, { ...this.opts.appSettings, statement_timeout: `${APP_STATEMENT_TIMEOUT_MS}` });
    const [{ who }] = (await this.app.query<{ who: string }>('SELECT current_user AS who')).rows;
    if (who !== APP_ROLE) throw new Error(`the application connection is ${who}, not ${APP_ROLE}`);
  }

  private async closeWork(): Promise<void> {
    await this.app?.end().catch(() => undefined);
    await this.admin?.end().catch(() => undefined);
    await this.database?.close().catch(() => undefined);
    this.app = this.admin = this.database = undefined;
    if (this.workDb) {
      const su = await this.connect('postgres', 'postgres');
      try {
        await su.query(`DROP DATABASE IF EXISTS ${this.workDb} WITH (FORCE)`);
      } finally {
        await su.end();
      }
      this.workDb = '';
    }
  }

  /** Every write three times; each must end the same way each time (else the write is no yardstick). */
  private async recordBaseline(): Promise<void> {
    const runs = new Map<string, Outcome[]>();
    for (let round = 0; round < 3; round++) {
      for (const w of this.writes) {
        const o = await this.runOne(w);
        runs.set(w.id, [...(runs.get(w.id) ?? []), o]);
      }
    }
    const unstable: string[] = [];
    for (const w of this.writes) {
      const outcomes = runs.get(w.id) ?? [];
      if (!outcomes.every((o) => sameOutcome(o, outcomes[0]))) unstable.push(`${w.id}: ${outcomes.map(describeOutcome).join(' / ')}`);
      const sorted = outcomes.map((o) => o.ms).sort((a, b) => a - b);
      this.baseline.set(w.id, { outcome: outcomes[0], medianMs: sorted[1] });
    }
    if (unstable.length > 0) throw new Error(`writes whose outcome changed between baseline runs (no migration applied):\n${unstable.join('\n')}`);
    const ok = [...this.baseline.values()].filter((b) => b.outcome.ok).length;
    const total = [...this.baseline.values()].reduce((s, b) => s + b.medianMs, 0);
    const slowest = [...this.baseline.entries()]
      .sort((a, b) => b[1].medianMs - a[1].medianMs)
      .slice(0, 4)
      .map(([id, b]) => `${id} ${b.medianMs} ms`);
    this.log(
      `baseline: ${ok} of ${this.writes.length} writes succeed, ${this.writes.length - ok} fail; ${Math.round(total)} ms per round (slowest: ${slowest.join('; ')})`,
    );
  }

  /** The failures the baseline records, by SQLSTATE (for the log). */
  baselineFailures(): Map<string, number> {
    const out = new Map<string, number>();
    for (const b of this.baseline.values()) if (!b.outcome.ok) out.set(b.outcome.code, (out.get(b.outcome.code) ?? 0) + 1);
    return out;
  }

  private async runOne(w: Write): Promise<Outcome> {
    if (!this.app) throw new Error('no application connection');
    const o = await runWrite(this.app, w, WRITE_DEADLINE_MS);
    if (o.lost) {
      await this.app.end().catch(() => undefined);
      this.app = await this.connect(APP_ROLE, this.workDb, { ...this.opts.appSettings, statement_timeout: `${APP_STATEMENT_TIMEOUT_MS}` });
    }
    const { lost: _lost, ...outcome } = o;
    return outcome;
  }

  /** The bound of a write (see TIMING). */
  boundMs(w: Write): number {
    const b = this.baseline.get(w.id);
    return Math.max(TIMING.FLOOR_MS, TIMING.FACTOR * (b?.medianMs ?? 0));
  }

  /** Runs every write and compares it with the baseline, until `maxDifferences` differences. */
  async compareWrites(maxDifferences = MAX_DIFFERENCES): Promise<{ differences: WriteDifference[]; notRun: number }> {
    const differences: WriteDifference[] = [];
    for (let i = 0; i < this.writes.length; i++) {
      if (differences.length >= maxDifferences) return { differences, notRun: this.writes.length - i };
      const w = this.writes[i];
      const before = this.baseline.get(w.id);
      if (!before) continue;
      const after = await this.runOne(w);
      if (!sameOutcome(before.outcome, after)) {
        differences.push({ write: w, before: before.outcome, after });
        continue;
      }
      const bound = this.boundMs(w);
      if (after.ms <= bound) continue;
      const runs = [after.ms];
      let last = after;
      for (const wait of TIMING.RETRY_PAUSES_MS) {
        this.timing.retries++;
        await pause(wait);
        last = await this.runOne(w);
        runs.push(last.ms);
        if (!sameOutcome(before.outcome, last) || last.ms <= bound) break;
      }
      if (!sameOutcome(before.outcome, last)) differences.push({ write: w, before: before.outcome, after: last });
      else if (last.ms > bound) differences.push({ write: w, before: before.outcome, after: last, slow: { runs, boundMs: bound } });
    }
    return { differences, notRun: 0 };
  }

  /**
   * Applies `migration` as Forge does (at the true time), runs every write (on this world's clock), compares, and
   * puts the world back. `maxDifferences` ends the writes early (the self-test needs one).
   */
  async runCase(migration: string, maxDifferences = MAX_DIFFERENCES): Promise<WorldRun> {
    const started = performance.now();
    const notes: string[] = [];
    const name = `writes-${++this.seq}`;
    await this.setClock('true time');
    const apply = await this.apply(name, migration, notes);
    this.timing.applyMs += apply.ms;
    const t = performance.now();
    await this.setClock('ahead');
    const { differences, notRun } = await this.compareWrites(maxDifferences);
    await this.setClock('true time');
    const writesMs = Math.round(performance.now() - t);
    this.timing.writesMs += writesMs;

    const c = performance.now();
    notes.push(...(await this.cleanup()));
    if (differences.length > 0 || apply.kind === 'error' || apply.kind === 'hung' || notes.some((n) => n.startsWith('cleanup:'))) {
      // Whatever the case left that the cleanup does not know of stays in the old copy.
      await this.openWork();
      this.timing.rebuilds++;
      notes.push(`fresh copy of the database after the case (${this.workDb})`);
    }
    this.timing.cleanupMs += performance.now() - c;
    this.timing.cases++;
    return { world: this.opts.label, apply, differences, notRun, notes, writesMs, ms: Math.round(performance.now() - started) };
  }

  private async apply(name: string, migration: string, notes: string[]): Promise<ApplyOutcome> {
    const input: ApplyMigrationInput = {
      name,
      sql: migration,
      checksum: migrationChecksum(migration),
      workflowId: `schema-migrate/${name}`,
      runId: `writes-run-${this.seq}`,
    };
    const started = performance.now();
    const ms = () => Math.round(performance.now() - started);
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<'hung'>((resolve) => {
      timer = setTimeout(() => resolve('hung'), APPLY_DEADLINE_MS);
    });
    try {
      const done = await Promise.race([applyLikeTheWorkflow(this.activities, input), deadline]);
      if (done === 'hung') return { kind: 'hung', ms: ms() };
      if (done.result.status !== 'applied') notes.push(`apply answered ${JSON.stringify(done.result)}`);
      return { kind: 'applied', ms: ms(), online: done.online };
    } catch (err) {
      return classifyFailure(err, ms());
    } finally {
      clearTimeout(timer);
    }
  }

  /** Drops every agent object as the superuser (catalog.ts CLEANUP_SQL); returns what it could not drop. */
  private async cleanup(): Promise<string[]> {
    const admin = this.admin;
    if (!admin) return ['cleanup: no superuser connection'];
    const problems: string[] = [];
    try {
      const { rows } = await admin.query<{ stmt: string }>(CLEANUP_SQL, [SCHEMA, this.forgeTables]);
      for (const { stmt } of rows) {
        try {
          await admin.query(stmt);
        } catch (err) {
          problems.push(`cleanup: ${stmt}: ${(err as Error).message}`);
        }
      }
    } catch (err) {
      problems.push(`cleanup: ${(err as Error).message}`);
    }
    return problems;
  }

  /** A statement as the superuser on the working database (the self-test's setup). */
  async superuserQuery(text: string): Promise<unknown[]> {
    if (!this.admin) throw new Error('no superuser connection');
    return (await this.admin.query(text)).rows;
  }

  /** The activities a case is applied with from now on (the self-test's overridden judge, then the real one). */
  useActivities(createActivities: ActivitiesFactory): void {
    this.opts.createActivities = createActivities;
    if (this.database) this.activities = createActivities({ database: this.database, schema: SCHEMA, limits: this.opts.limits }) as WorkflowActivities;
  }

  async close(): Promise<void> {
    await this.closeWork().catch(() => undefined);
    await this.pg?.dispose();
    if (this.clockDir) rmSync(this.clockDir, { recursive: true, force: true });
  }
}
