/**
 * The differential harness: one throwaway PostgreSQL database with Forge's tables (Forge's own migrations) and the
 * core fixture, Forge's pool, and three plain connections of its own — an "application" connection that only has to
 * stay alive, an inspector that reads the catalog, and a listener on Forge's notification channels. A case is applied
 * exactly as Forge applies it (the migration activity's `applyMigration`) and the world is compared before and after
 * (snapshot.ts). Afterwards every agent object is dropped, so that each case meets the fixture as the corpus wrote it
 * against; a case that changed anything else leaves the harness "dirty" and the next case starts from a fresh record.
 */
import { readFileSync } from 'node:fs';
import { sql } from 'drizzle-orm';
import { Client } from 'pg';
import type { ApplyMigrationInput, ApplyMigrationResult, MigrationActivityDeps } from '../../../src/activities/migration-activities';
import type { ForgeDatabase, MigrationLimits } from '../../../src/db';
import { TOOLS_CHANNEL } from '../../../src/db/channels';
import { migrationChecksum } from '../../../src/policy';
import { FailureType } from '../../../src/contract/failures';
import { postgresBackend, type TestBackend } from '../../db/backends';
import { applyToTheEnd } from '../../migrate/helpers';
import { BUILT_IN_HASH_SQL, BUILT_IN_ROWS_SQL, CATALOG_SQL, CLEANUP_SQL } from './catalog';
import {
  compareSnapshots,
  diffMaps,
  filterDump,
  findFileWatch,
  findPgDump,
  listFiles,
  parseDump,
  runPgDump,
  type AgentFacts,
  type FacetChange,
  type FileWatch,
  type SequenceValue,
  type Snapshot,
  type TableRows,
} from './snapshot';

export type ApplyFn = (input: ApplyMigrationInput) => Promise<ApplyMigrationResult>;
/** `createMigrationActivities`, or (for the harness's own self-test) the same with the judge's verdict overridden. */
export type ActivitiesFactory = (deps: MigrationActivityDeps) => Parameters<typeof applyToTheEnd>[0];

/** How Forge's apply ended. */
export type ApplyOutcome =
  /** `online`: how many indexes on core tables were built CONCURRENTLY after the transaction. */
  | { kind: 'applied'; ms: number; online?: number }
  /** MigrationFailed: PostgreSQL refused a statement (or COMMIT); rolled back. */
  | { kind: 'failed'; ms: number; code?: string; statementIndex?: number; message: string }
  /** MigrationRejected from the activity itself (its own judge, the name, the size). */
  | { kind: 'refused'; ms: number; message: string }
  /** Anything else: an error Temporal would retry (a lost connection), or a result that should not happen. */
  | { kind: 'error'; ms: number; message: string }
  | { kind: 'hung'; ms: number };

export interface CaseRun {
  name: string;
  apply: ApplyOutcome;
  changes: FacetChange[];
  /** Things the harness had to do or could not do (a cleanup that failed, a connection it reopened). */
  notes: string[];
  ms: number;
}

export interface HarnessOptions {
  adminUrl: string;
  limits: MigrationLimits;
  createActivities: ActivitiesFactory;
  /** The core schema (core-fixture.sql). */
  fixtureSql: string;
  /** Channels to LISTEN on besides Forge's own. */
  channels?: string[];
  log?: (message: string) => void;
}

const SCHEMA = 'public';
/** Forge's own tables (src/db/schema.ts); the tracking table is whichever of the two names exists. */
const FORGE_TABLES = ['tool_versions', 'tool_version_counters', 'active_tools', 'events', 'forge_migrations', 'agent_migrations'];
const SENTINEL_CHANNEL = 'forge_difftest_sentinel';
/** A case that has not ended by then is reported as hung; the transaction's own timeouts should end it long before. */
const APPLY_DEADLINE_MS = 30_000;

const quoteIdent = (name: string) => `"${name.replace(/"/g, '""')}"`;
const quoteLiteral = (text: string) => `'${text.replace(/'/g, "''")}'`;

/** The session state a query on Forge's pool sees (the brief's list, and what else outlives a transaction). */
const SESSION_SQL = `SELECT json_build_object(
  'backend pid', pg_backend_pid()::text,
  'current_user', current_user::text,
  'session_user', session_user::text,
  'search_path', current_setting('search_path'),
  'transaction_read_only', current_setting('transaction_read_only'),
  'standard_conforming_strings', current_setting('standard_conforming_strings'),
  'statement_timeout', current_setting('statement_timeout'),
  'lock_timeout', current_setting('lock_timeout'),
  'idle_in_transaction_session_timeout', current_setting('idle_in_transaction_session_timeout'),
  'settings', (SELECT json_object_agg(name, setting ORDER BY name) FROM pg_settings WHERE source NOT IN ('default', 'override')),
  'listening channels', (SELECT string_agg(c, ',' ORDER BY c) FROM pg_listening_channels() c),
  'open cursors', (SELECT string_agg(name, ',' ORDER BY name) FROM pg_cursors),
  'prepared statements', (SELECT string_agg(name, ',' ORDER BY name) FROM pg_prepared_statements),
  'temporary relations', (SELECT string_agg(relname, ',' ORDER BY relname) FROM pg_class WHERE relnamespace = pg_my_temp_schema())
)::text AS s`;

/** A plain connection of the harness's own, which it reopens when a case kills it. */
class SideConnection {
  client!: Client;
  pid = 0;
  lost: string | undefined;

  constructor(
    private readonly url: string,
    readonly label: string,
    private readonly channels: string[] = [],
    private readonly onNotification?: (channel: string, payload: string) => void,
  ) {}

  async open(): Promise<void> {
    const client = new Client({ connectionString: this.url, application_name: `forge-difftest-${this.label}` });
    client.on('error', (err) => {
      this.lost ??= err.message;
    });
    client.on('end', () => {
      this.lost ??= 'the connection ended';
    });
    const onNotification = this.onNotification;
    if (onNotification) client.on('notification', (m) => onNotification(m.channel, m.payload ?? ''));
    await client.connect();
    this.client = client;
    this.lost = undefined;
    this.pid = (await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0].pid;
    if (this.channels.length > 0) await client.query(this.channels.map((c) => `LISTEN ${quoteIdent(c)};`).join(' '));
  }

  async reopen(): Promise<void> {
    await this.client?.end().catch(() => undefined);
    await this.open();
  }

  async close(): Promise<void> {
    await this.client?.end().catch(() => undefined);
  }
}

/**
 * Errors that a pg Client emitted with no one listening. node-postgres emits 'error' on a client whose backend went
 * away; pg-pool listens only on idle clients, so a checked-out client (the one running a migration) whose session is
 * killed throws an uncaught exception: a worker would crash. The harness records it against the case instead of
 * letting it take the test run down, and reports it (facet 'apply').
 */
const unheardErrors: string[] = [];
let guardDepth = 0;
let originalEmit: typeof Client.prototype.emit | undefined;

function guardUnheardClientErrors(): () => void {
  if (guardDepth++ === 0) {
    const emit = Client.prototype.emit;
    originalEmit = emit;
    Client.prototype.emit = function (this: Client, event: string | symbol, ...args: unknown[]): boolean {
      if (event === 'error' && this.listenerCount('error') === 0) {
        unheardErrors.push(String((args[0] as Error)?.message ?? args[0]));
        return false;
      }
      return emit.call(this, event, ...args);
    } as typeof Client.prototype.emit;
  }
  return () => {
    if (--guardDepth === 0 && originalEmit) Client.prototype.emit = originalEmit;
  };
}

function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: no answer within ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/** How a failed apply ended: a verdict (failed, refused) or an error Forge would retry. */
export function classifyFailure(err: unknown, ms: number): ApplyOutcome {
  const failure = err as { type?: unknown; nonRetryable?: unknown; message?: string; details?: unknown[] };
  const message = failure?.message ?? String(err);
  if (typeof failure?.type === 'string' && typeof failure.nonRetryable === 'boolean') {
    if (failure.type === FailureType.migrationFailed) {
      const detail = (failure.details?.[0] ?? {}) as { error?: { code?: string; statementIndex?: number } };
      return { kind: 'failed', ms, code: detail.error?.code, statementIndex: detail.error?.statementIndex, message };
    }
    if (failure.type === FailureType.migrationRejected) return { kind: 'refused', ms, message };
  }
  return { kind: 'error', ms, message: `${(err as Error)?.name ?? 'Error'}: ${message}` };
}

export function describeApply(a: ApplyOutcome): string {
  switch (a.kind) {
    case 'applied':
      return `applied (${a.ms} ms${a.online ? `, ${a.online} core index(es) built online` : ''})`;
    case 'failed':
      return `failed and rolled back: ${a.code ?? '?'} in statement ${a.statementIndex ?? '(COMMIT)'}: ${a.message.slice(0, 200)}`;
    case 'refused':
      return `refused by the activity: ${a.message.slice(0, 200)}`;
    case 'error':
      return `ended in an error Forge would retry (not a verdict): ${a.message.slice(0, 300)}`;
    case 'hung':
      return `did not end within ${APPLY_DEADLINE_MS} ms`;
  }
}

export class DifferentialHarness {
  private database!: ForgeDatabase;
  private apply!: ApplyFn;
  private app!: SideConnection;
  private inspector!: SideConnection;
  private listener!: SideConnection;
  private received: Array<{ channel: string; payload: string }> = [];
  private sentinels = new Map<string, () => void>();
  private dbUrl = '';
  private dbName = '';
  private trackingTable = '';
  private eventsSequence = '';
  private pgDump: string | undefined;
  private fileWatch: FileWatch | undefined;
  private builtInRows = new Map<string, Map<string, string>>();
  private builtInHashesAtStart = new Map<string, string>();
  private last: Snapshot | undefined;
  private seq = 0;
  private unguard: (() => void) | undefined;
  /** Why a facet is not compared on this machine (logged once). */
  readonly skipped: string[] = [];
  readonly timing = { cases: 0, applyMs: 0, snapshotMs: 0, cleanupMs: 0, snapshotParts: {} as Record<string, number> };

  private constructor(
    private readonly backend: TestBackend,
    private readonly opts: HarnessOptions,
  ) {}

  static async open(opts: HarnessOptions): Promise<DifferentialHarness> {
    const harness = new DifferentialHarness(postgresBackend(opts.adminUrl), opts);
    try {
      await harness.setUp();
    } catch (err) {
      await harness.close();
      throw err;
    }
    return harness;
  }

  /** The case's apply, as the workflow runs it: the transaction, the core indexes built CONCURRENTLY, the record. */
  private applyOf(activities: Parameters<typeof applyToTheEnd>[0]): ApplyFn {
    return (input) => applyToTheEnd(activities, input);
  }

  private log(message: string): void {
    this.opts.log?.(message);
  }

  private async setUp(): Promise<void> {
    this.unguard = guardUnheardClientErrors();
    // Forge's own tables come from Forge's migrations, run by openPostgres.
    this.database = await this.backend.open(SCHEMA);
    this.apply = this.applyOf(this.opts.createActivities({ database: this.database, schema: SCHEMA, limits: this.opts.limits }));
    const [{ db }] = await this.poolQuery<{ db: string }>('SELECT current_database() AS db');
    this.dbName = db;
    const url = new URL(this.opts.adminUrl);
    url.pathname = `/${db}`;
    this.dbUrl = url.toString();

    const fixture = new Client({ connectionString: this.dbUrl });
    await fixture.connect();
    try {
      await fixture.query(this.opts.fixtureSql);
    } finally {
      await fixture.end();
    }

    const channels = [...new Set([TOOLS_CHANNEL, SENTINEL_CHANNEL, ...(this.opts.channels ?? [])])];
    this.app = new SideConnection(this.dbUrl, 'app');
    this.inspector = new SideConnection(this.dbUrl, 'inspector');
    this.listener = new SideConnection(this.dbUrl, 'listener', channels, (channel, payload) => this.onNotification(channel, payload));
    await Promise.all([this.app.open(), this.inspector.open(), this.listener.open()]);

    const tables = await this.inspect<{ relname: string }>(
      `SELECT relname FROM pg_class WHERE relnamespace = $1::regnamespace AND relname IN ('forge_migrations', 'agent_migrations') AND relkind = 'r'`,
      [SCHEMA],
    );
    if (tables.length !== 1) throw new Error(`expected one tracking table (forge_migrations or agent_migrations), found ${tables.length}`);
    this.trackingTable = `${SCHEMA}.${tables[0].relname}`;
    const [seq] = await this.inspect<{ s: string }>(`SELECT pg_get_serial_sequence($1, 'id') AS s`, [`${SCHEMA}.events`]);
    this.eventsSequence = seq.s;

    const [{ server_version_num: v }] = await this.inspect<{ server_version_num: string }>('SHOW server_version_num');
    this.pgDump = findPgDump(Math.floor(Number(v) / 10_000));
    if (!this.pgDump) this.skip(`pg_dump facet skipped: no pg_dump for server version ${v}`);
    else {
      try {
        await runPgDump(this.pgDump, this.dbUrl);
      } catch (err) {
        this.skip(`pg_dump facet skipped: ${this.pgDump} failed on this server (${String((err as Error).message).slice(0, 300)})`);
        this.pgDump = undefined;
      }
    }

    const host = url.hostname.replace(/^\[|\]$/g, '');
    if (!['127.0.0.1', 'localhost', '::1', ''].includes(host)) {
      this.skip(`files facet skipped: the server (${host}) is not on this machine`);
    } else {
      const watch = await findFileWatch(Number(url.port || 5432));
      if (typeof watch === 'string') this.skip(`files facet skipped: ${watch}`);
      else this.fileWatch = watch;
    }

    for (const r of await this.inspect<{ grp: string; key: string; def: string }>(BUILT_IN_HASH_SQL)) this.builtInHashesAtStart.set(r.grp, r.def);
    const catalogs = [...this.builtInHashesAtStart.keys()].map((g) => g.replace(/^built-in /, ''));
    for (const r of await this.inspect<{ grp: string; key: string; def: string }>(BUILT_IN_ROWS_SQL, [catalogs])) {
      if (!this.builtInRows.has(r.grp)) this.builtInRows.set(r.grp, new Map());
      this.builtInRows.get(r.grp)?.set(r.key, r.def);
    }
  }

  private skip(reason: string): void {
    this.skipped.push(reason);
    this.log(reason);
  }

  private onNotification(channel: string, payload: string): void {
    if (channel === SENTINEL_CHANNEL) {
      this.sentinels.get(payload)?.();
      return;
    }
    this.received.push({ channel, payload });
  }

  private async poolQuery<T>(text: string): Promise<T[]> {
    const result = (await this.database.db.execute(sql.raw(text))) as unknown as { rows: T[] };
    return result.rows;
  }

  /** A query on the inspector; reopened once when a case killed it. */
  private async inspect<T extends object>(text: string, params: unknown[] = []): Promise<T[]> {
    try {
      return (await this.inspector.client.query<T>(text, params)).rows;
    } catch (err) {
      if (!this.inspector.lost) throw err;
      await this.inspector.reopen();
      return (await this.inspector.client.query<T>(text, params)).rows;
    }
  }

  /** Where the files facet looks, when it can. */
  get files(): FileWatch | undefined {
    return this.fileWatch;
  }

  /**
   * A new record compared with the one the next case will start from: empty when the cleanup after the last case put
   * back exactly what the comparison ignores (the harness's own check that dropping agent objects is invisible).
   */
  async verifyRestored(): Promise<FacetChange[]> {
    if (!this.last) return [];
    const now = await this.snapshot();
    return compareSnapshots(this.last, now, {
      applied: false,
      failedAtCommit: false,
      trackingTable: this.trackingTable,
      eventsTable: `${SCHEMA}.events`,
      eventsSequence: this.eventsSequence,
    });
  }

  /** The database this harness made (for messages). */
  get databaseName(): string {
    return this.dbName;
  }

  /**
   * Applies `migration` as Forge does and compares the world before and after. `plant` runs right after the apply
   * (the self-test uses it to put a file where the server could have written one), `unplant` after the comparison.
   */
  async runCase(migration: string, hooks: { plant?: () => Promise<void>; unplant?: () => Promise<void> } = {}): Promise<CaseRun> {
    const started = performance.now();
    const seq = ++this.seq;
    const name = `difftest-${seq}`;
    const notes: string[] = [];
    this.last ??= await this.snapshot();
    const before = this.last;
    this.received = [];

    unheardErrors.length = 0;
    const apply = await this.applyMigration(name, migration, seq);
    this.timing.applyMs += apply.ms;
    await hooks.plant?.();

    const changes = await this.checkOtherSessions(name, notes);
    if (unheardErrors.length > 0) {
      changes.push({
        facet: 'apply',
        summary: "a connection emitted an 'error' no one listens to (in a worker: an uncaught exception)",
        diff: unheardErrors.splice(0).map((e) => `+ ${e}`),
      });
    }
    const t = performance.now();
    const after = await this.snapshot(name);
    this.timing.snapshotMs += performance.now() - t;
    changes.push(
      ...compareSnapshots(before, after, {
        applied: apply.kind === 'applied',
        failedAtCommit: apply.kind === 'failed' && apply.statementIndex === undefined,
        trackingTable: this.trackingTable,
        eventsTable: `${SCHEMA}.events`,
        eventsSequence: this.eventsSequence,
      }),
    );
    await this.explainBuiltIns(changes);
    if (apply.kind === 'error' || apply.kind === 'hung') {
      changes.push({ facet: 'apply', summary: 'the apply did not end in a verdict', diff: [describeApply(apply)] });
    }
    await hooks.unplant?.();

    await this.recover(apply, changes, after, notes);
    this.timing.cases++;
    return { name, apply, changes, notes, ms: Math.round(performance.now() - started) };
  }

  private async applyMigration(name: string, migration: string, seq: number): Promise<ApplyOutcome> {
    const input: ApplyMigrationInput = {
      name,
      sql: migration,
      checksum: migrationChecksum(migration),
      workflowId: `schema-migrate/${name}`,
      runId: `difftest-run-${seq}`,
    };
    const started = performance.now();
    const ms = () => Math.round(performance.now() - started);
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<'hung'>((resolve) => {
      timer = setTimeout(() => resolve('hung'), APPLY_DEADLINE_MS);
    });
    try {
      const result = await Promise.race([this.apply(input), deadline]);
      if (result === 'hung') return { kind: 'hung', ms: ms() };
      if (result.status !== 'applied' || result.byEarlierAttempt) {
        return { kind: 'error', ms: ms(), message: `unexpected result for a new name: ${JSON.stringify(result)}` };
      }
      return { kind: 'applied', ms: ms() };
    } catch (err) {
      return classifyFailure(err, ms());
    } finally {
      clearTimeout(timer);
    }
  }

  /** Notifications on Forge's channels, the application connection, and whether any of our backends was killed. */
  private async checkOtherSessions(token: string, notes: string[]): Promise<FacetChange[]> {
    const changes: FacetChange[] = [];
    const died: string[] = [];
    const inspectorPid = this.inspector.pid;
    for (const side of [this.app, this.inspector, this.listener]) if (side.lost) died.push(`${side.label} (pid ${side.pid}): ${side.lost}`);
    if (this.inspector.lost) await this.inspector.reopen();

    // Every notification committed before the sentinel is delivered before it.
    let listenerAnswered = true;
    if (!this.listener.lost) {
      const delivered = new Promise<void>((resolve) => this.sentinels.set(token, resolve));
      try {
        await this.inspect('SELECT pg_notify($1, $2)', [SENTINEL_CHANNEL, token]);
        await withTimeout(delivered, 5_000, 'the listener');
      } catch (err) {
        listenerAnswered = false;
        notes.push(`notifications not checked: ${(err as Error).message}`);
      } finally {
        this.sentinels.delete(token);
      }
    }
    if (this.received.length > 0) {
      changes.push({
        facet: 'notifications',
        summary: `${this.received.length} notification(s) on Forge's channels`,
        diff: this.received.map((n) => `+ ${n.channel}: ${JSON.stringify(n.payload)}`),
      });
    }

    if (!this.app.lost) {
      try {
        await withTimeout(this.app.client.query('SELECT 1'), 3_000, 'the application connection');
      } catch (err) {
        died.push(`app (pid ${this.app.pid}): SELECT 1 failed: ${(err as Error).message}`);
      }
    }
    const pids = [this.app.pid, this.listener.pid];
    const alive = new Set((await this.inspect<{ pid: number }>('SELECT pid FROM pg_stat_activity WHERE pid = ANY ($1)', [pids])).map((r) => r.pid));
    for (const side of [this.app, this.listener]) {
      if (!alive.has(side.pid) && !died.some((d) => d.startsWith(side.label))) died.push(`${side.label} (pid ${side.pid}): gone from pg_stat_activity`);
    }
    if (!listenerAnswered && !died.some((d) => d.startsWith('listener'))) died.push(`listener (pid ${this.listener.pid}): did not deliver the sentinel`);
    if (this.inspector.pid !== inspectorPid && !died.some((d) => d.startsWith('inspector'))) died.push(`inspector (pid ${inspectorPid}): terminated`);
    if (died.length > 0) changes.push({ facet: 'other sessions', summary: 'other sessions were disturbed', diff: died.map((d) => `- ${d}`) });
    return changes;
  }

  /** Reads everything the comparison needs. `caseName` marks the rows a case is expected to add. */
  async snapshot(caseName = ''): Promise<Snapshot> {
    const timing: Record<string, number> = {};
    const time = async <T>(part: string, work: () => Promise<T>): Promise<T> => {
      const t = performance.now();
      try {
        return await work();
      } finally {
        timing[part] = Math.round(performance.now() - t);
        this.timing.snapshotParts[part] = (this.timing.snapshotParts[part] ?? 0) + timing[part];
      }
    };
    // Forge's pool first, before anything else could hand it a new connection.
    const session = await time('session', () => this.poolSession());
    const pgDump = this.pgDump;
    const dump = pgDump
      ? time('pg_dump', () => runPgDump(pgDump, this.dbUrl)).then(
          (text) => ({ text }),
          (err: unknown) => ({ error: String((err as Error).message ?? err).slice(0, 500) }),
        )
      : undefined;
    const watch = this.fileWatch;
    const files = watch ? await time('files', async () => listFiles(watch)) : undefined;

    const catalogRows = await time('catalog', () => this.inspect<{ grp: string; key: string; def: string | null }>(CATALOG_SQL, [SCHEMA, FORGE_TABLES]));
    const catalog = new Map<string, string>();
    const reach = new Map<string, string>();
    const facts: AgentFacts = { relations: new Set(), columns: new Set(), constraints: new Set(), types: new Set() };
    const tables: Array<{ qname: string; columns: string[] }> = [];
    const sequences: string[] = [];
    const normal = (json: string) => JSON.stringify(JSON.parse(json));
    for (const r of catalogRows) {
      if (r.grp === 'reach') reach.set(r.key, r.def ?? '');
      else if (r.grp === '~agent-relation') facts.relations.add(normal(r.key));
      else if (r.grp === '~agent-column') facts.columns.add(normal(r.key));
      else if (r.grp === '~agent-constraint') facts.constraints.add(normal(r.key));
      else if (r.grp === '~agent-type') facts.types.add(normal(r.key));
      else if (r.grp === '~table') tables.push({ qname: r.key, columns: JSON.parse(r.def ?? '[]') as string[] });
      else if (r.grp === '~sequence') sequences.push(r.key);
      else {
        let k = `${r.grp} ${r.key}`;
        for (let n = 2; catalog.has(k); n++) k = `${r.grp} ${r.key} #${n}`;
        catalog.set(k, r.def ?? '');
      }
    }

    const data = await time('rows', () => this.readData(tables, sequences, caseName));
    const others = await time('locks', () =>
      this.inspect<{ kind: string; v: string; pid: number | null }>(
        `SELECT 'lock' AS kind, concat_ws(' ', classid || '/' || objid || '/' || objsubid, mode, CASE WHEN granted THEN 'granted' ELSE 'waiting' END) AS v, pid
         FROM pg_locks WHERE locktype = 'advisory' AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
         UNION ALL SELECT 'lo', count(*)::text, NULL FROM pg_largeobject_metadata`,
      ),
    );
    const holder = (pid: number | null) =>
      pid === Number(session['backend pid'])
        ? "Forge's pool"
        : ([this.app, this.inspector, this.listener].find((s) => s.pid === pid)?.label ?? 'another session');
    const advisoryLocks = others
      .filter((r) => r.kind === 'lock')
      .map((r) => `${r.v} held by ${holder(r.pid)}`)
      .sort();
    const largeObjects = Number(others.find((r) => r.kind === 'lo')?.v ?? 0);

    let dumpMap: Map<string, string> | undefined;
    if (dump) {
      const result = await dump;
      dumpMap = 'text' in result ? filterDump(parseDump(result.text), facts) : new Map([['pg_dump failed', result.error]]);
    }
    return { catalog, reach, facts, dump: dumpMap, ...data, session, advisoryLocks, largeObjects, files, timing };
  }

  private async poolSession(): Promise<Record<string, string>> {
    let rows: Array<{ s: string }>;
    try {
      rows = await this.poolQuery<{ s: string }>(SESSION_SQL);
    } catch {
      // The pool hands out a new connection when a case killed the one it had.
      rows = await this.poolQuery<{ s: string }>(SESSION_SQL);
    }
    const raw = JSON.parse(rows[0].s) as Record<string, unknown>;
    const out: Record<string, string> = {};
    for (const [k, v] of Object.entries(raw)) {
      if (k === 'settings') for (const [name, setting] of Object.entries((v ?? {}) as Record<string, string>)) out[`setting ${name}`] = setting;
      else out[k] = v === null ? '(none)' : String(v);
    }
    return out;
  }

  /** Row counts, row hashes and sequence values of everything that is not the agent's, in one query. */
  private async readData(
    tables: Array<{ qname: string; columns: string[] }>,
    sequences: string[],
    caseName: string,
  ): Promise<{ rows: Map<string, TableRows>; sequences: Map<string, SequenceValue> }> {
    const parts: string[] = [];
    for (const t of tables) {
      const aggregate = (filter: string) => `md5(coalesce(string_agg(r::text, E'\\n' ORDER BY r::text)${filter}, '')), (count(*)${filter})::text`;
      let without = 'NULL::text, NULL::text';
      if (t.qname === this.trackingTable) without = aggregate(' FILTER (WHERE r.name <> $1)');
      if (t.qname === `${SCHEMA}.events`) without = aggregate(` FILTER (WHERE NOT (r.kind = 'migration.applied' AND r.subject = $1))`);
      parts.push(
        `SELECT 'table' AS kind, ${quoteLiteral(t.qname)} AS name, ${aggregate('')}, ${without} FROM (SELECT ${t.columns.join(', ')} FROM ${t.qname}) r`,
      );
    }
    for (const s of sequences) {
      parts.push(`SELECT 'sequence', ${quoteLiteral(s)}, last_value::text, is_called::text, NULL, NULL FROM ${s}`);
    }
    const rows = new Map<string, TableRows>();
    const values = new Map<string, SequenceValue>();
    if (parts.length === 0) return { rows, sequences: values };
    const result = await this.inspect<{ kind: string; name: string; a: string; b: string; c: string | null; d: string | null }>(
      `SELECT * FROM (${parts.join('\nUNION ALL ')}) x(kind, name, a, b, c, d)`,
      [caseName],
    );
    for (const r of result) {
      if (r.kind === 'table') {
        rows.set(r.name, {
          hash: r.a,
          count: Number(r.b),
          hashWithoutCase: r.c ?? undefined,
          countWithoutCase: r.d === null ? undefined : Number(r.d),
        });
      } else {
        values.set(r.name, { lastValue: r.a, isCalled: r.b === 'true' });
      }
    }
    return { rows, sequences: values };
  }

  /** A built-in catalogue's hash moved: show its rows that moved, against the ones read at the start. */
  private async explainBuiltIns(changes: FacetChange[]): Promise<void> {
    const catalog = changes.find((c) => c.facet === 'catalog');
    if (!catalog) return;
    const moved = catalog.diff.map((d) => /^[~+-] built-in (\S+) #hash/.exec(d)?.[1]).filter((c): c is string => !!c);
    if (moved.length === 0) return;
    const now = new Map<string, Map<string, string>>();
    for (const r of await this.inspect<{ grp: string; key: string; def: string }>(BUILT_IN_ROWS_SQL, [moved])) {
      if (!now.has(r.grp)) now.set(r.grp, new Map());
      now.get(r.grp)?.set(r.key, r.def);
    }
    for (const cat of moved) {
      const grp = `built-in ${cat}`;
      const rows = now.get(grp) ?? new Map<string, string>();
      catalog.diff.push(...diffMaps(this.builtInRows.get(grp) ?? new Map(), rows).map((d) => `${grp}: ${d}`));
      this.builtInRows.set(grp, rows);
    }
  }

  /** Puts the world back for the next case: Forge's pool, our connections, the agent's objects, database settings. */
  private async recover(apply: ApplyOutcome, changes: FacetChange[], after: Snapshot, notes: string[]): Promise<void> {
    const facets = new Set(changes.map((c) => c.facet));
    if (facets.has('session') || facets.has('advisory locks') || apply.kind === 'error' || apply.kind === 'hung') {
      // A poisoned session (settings, locks, temporary tables) must not carry into the next case.
      await this.database.close().catch(() => undefined);
      this.database = await this.backend.open(SCHEMA);
      this.apply = this.applyOf(this.opts.createActivities({ database: this.database, schema: SCHEMA, limits: this.opts.limits }));
      notes.push("reopened Forge's database handle");
    }
    for (const side of [this.app, this.inspector, this.listener]) {
      if (side.lost) {
        await side.reopen();
        notes.push(`reopened the ${side.label} connection`);
      }
    }
    const t = performance.now();
    if (apply.kind === 'applied' || changes.length > 0) notes.push(...(await this.cleanup()));
    if ([...after.catalog.keys()].some((k) => k.startsWith('database settings of'))) notes.push(...(await this.resetSettings()));
    this.timing.cleanupMs += performance.now() - t;
    // A case that changed anything else may have left more than the cleanup puts back: start the next from a new record.
    this.last = changes.length > 0 ? undefined : after;
  }

  /** Drops every agent object (catalog.ts CLEANUP_SQL); returns what it could not drop. */
  async cleanup(): Promise<string[]> {
    const problems: string[] = [];
    const statements = await this.inspect<{ stmt: string }>(CLEANUP_SQL, [SCHEMA, FORGE_TABLES]);
    for (const { stmt } of statements) {
      try {
        await this.inspect(stmt);
      } catch (err) {
        problems.push(`cleanup: ${stmt}: ${(err as Error).message}`);
      }
    }
    return problems;
  }

  /** ALTER DATABASE / ROLE ... SET made by a case would reach every later session: undo them. */
  private async resetSettings(): Promise<string[]> {
    const problems: string[] = [];
    for (const stmt of [`ALTER DATABASE ${quoteIdent(this.dbName)} RESET ALL`, `ALTER ROLE CURRENT_USER IN DATABASE ${quoteIdent(this.dbName)} RESET ALL`]) {
      try {
        await this.inspect(stmt);
      } catch (err) {
        problems.push(`reset: ${stmt}: ${(err as Error).message}`);
      }
    }
    return problems;
  }

  /** Built-in catalogues compared whole at the end against the start (per case only what a role could change is). */
  async builtInChanges(): Promise<FacetChange[]> {
    const now = new Map((await this.inspect<{ grp: string; def: string }>(BUILT_IN_HASH_SQL)).map((r) => [r.grp, r.def]));
    const diff = diffMaps(this.builtInHashesAtStart, now);
    return diff.length > 0 ? [{ facet: 'catalog', summary: 'built-in catalogue rows changed during the run', diff }] : [];
  }

  async close(): Promise<void> {
    for (const side of [this.app, this.inspector, this.listener]) await side?.close();
    await this.database?.close().catch(() => undefined);
    await this.backend.dispose();
    this.unguard?.();
    this.unguard = undefined;
  }

  /** A statement on Forge's own pool, as Forge's other code would run one (the self-test plants session state so). */
  async forgeQuery(text: string): Promise<void> {
    await this.poolQuery(text);
  }
}

/** Channel names a corpus might notify on: Forge's, and any forge_* or pg_notify target written in its SQL. */
export function channelsIn(sqlTexts: string[]): string[] {
  const found = new Set<string>();
  for (const text of sqlTexts) {
    for (const m of text.matchAll(/pg_notify\s*\(\s*'([^']{1,63})'/gi)) found.add(m[1]);
    for (const m of text.matchAll(/\bNOTIFY\s+("?)([A-Za-z_][A-Za-z0-9_$]{0,62})\1/gi)) found.add(m[1] ? m[2] : m[2].toLowerCase());
    for (const m of text.matchAll(/'(forge_[A-Za-z0-9_$]{0,57})'/g)) found.add(m[1]);
  }
  return [...found].sort();
}

export function readFixture(): string {
  return readFileSync(`${__dirname}/core-fixture.sql`, 'utf8');
}
