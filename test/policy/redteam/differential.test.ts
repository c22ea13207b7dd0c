/**
 * The differential test of the schema policy (issue 8, "Tests", second bullet): every case of the red-team corpus
 * (corpus.ts, must-reject and legitimate alike, in order) that the judge (`checkMigration`) accepts is applied on a
 * real PostgreSQL exactly as Forge applies it — the migration activity's `applyMigration`, one transaction, Forge's
 * pool — and the world is compared before and after. Any change beyond the agent's own objects fails, naming the case
 * and the facet:
 *
 *  - catalog: a fingerprint of every object in every schema but pg_toast (columns, types, defaults, constraints with
 *    their definitions and FK actions, indexes, triggers, rules, policies, owners, privileges, sequences' OWNED BY,
 *    comments, functions, operators, ..., the database's and the role's settings); built-in catalogues by hash;
 *  - pg_dump: `pg_dump --schema-only` of the whole database with the agent's objects, columns and constraints
 *    filtered out, diffed entry by entry (the readable DDL view of the same thing);
 *  - reach: agent objects that reach core data (SCHEMA_POLICY.md "Core tables stay the application's": CASCADE
 *    foreign keys on core tables, unique indexes on core tables, CHECKs reading core columns or calling non-immutable
 *    functions, sequences owned by core columns, views over system catalogs, anything depending on Forge's tables);
 *  - rows: the count and contents of every table that is not the agent's, Forge's included, except that the tracking
 *    table and `events` gain exactly one row each when the case was applied;
 *  - sequences: last_value and is_called of every sequence that is not the agent's (events' advances by one);
 *  - session: what a query on Forge's pool sees afterwards (pg_settings not at their defaults, current_user,
 *    search_path, read-only, standard_conforming_strings, timeouts, LISTENs, cursors, temporary tables);
 *  - advisory locks held by anyone in the database, and large objects;
 *  - other sessions: an application connection opened before answers `SELECT 1`, no backend of ours was killed;
 *  - files: names and sizes under the server's data directory outside its own bookkeeping, and what the server's user
 *    owns in /tmp, /dev/shm, its home and socket directory (skipped, with the reason logged, where unreadable);
 *  - notifications on Forge's channels (TOOLS_CHANNEL, and any forge_* or pg_notify channel the corpus names).
 *
 * A must-reject case the judge accepts is a bypass: the suite fails listing every bypass together (and each bypass
 * that changed something fails on its own as well). A legitimate case must be accepted, applied, and change nothing
 * but agent objects. After every case the agent's objects are dropped, so each case meets the fixture it was written
 * against. The first describe block proves the harness sees each facet, by planting changes with the judge's verdict
 * overridden (the judge is being hardened, so today's bypasses cannot be relied on to reach the database).
 *
 * Needs a PostgreSQL server: DATABASE_URL (.ci/run sets it; the role needs CREATEDB). Without it the suite is skipped.
 */
import { chownSync, existsSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { createMigrationActivities } from '../../../src/activities/migration-activities';
import { checkMigration, type PolicyReport } from '../../../src/policy';
import { legitimate, mustReject } from './corpus';
import { channelsIn, describeApply, DifferentialHarness, readFixture, type CaseRun } from './harness';
import { permissiveActivities } from './permissive-activities';
import { formatChanges, type Facet } from './snapshot';
import { describeIf } from '../../helpers/skip';
import { FIXTURE_CORE_TABLES } from './core-fixture';

const DATABASE_URL = process.env.DATABASE_URL;
// Real PostgreSQL only: PGlite has no pg_dump, no other sessions, no data directory and no server-side files to
// watch. Without DATABASE_URL (a developer machine without a server) there is nothing to run against.
const describePg = describeIf(DATABASE_URL, 'DATABASE_URL is not set (PostgreSQL only; CI sets it)');

/** Shorter than Forge's defaults (5 s / 60 s) so that a case that sleeps or waits costs seconds, not minutes. */
const limits = { lockTimeoutMs: 2_000, statementTimeoutMs: 5_000 };
const CASE_TIMEOUT_MS = 120_000;
/** DIFFTEST_VERBOSE=1 prints what every applied case did, passing or not. */
const VERBOSE = !!process.env.DIFFTEST_VERBOSE;

/** A migration as the failure messages show it: its first 200 characters, control characters escaped. */
function showSql(text: string): string {
  const head = [...text.slice(0, 200)]
    .map((c) => (c.charCodeAt(0) < 0x20 && c !== '\n' && c !== '\t' ? `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}` : c))
    .join('');
  return (head + (text.length > 200 ? ` … (${text.length} characters)` : '')).replace(/\n/g, '\n       ');
}

function describeRun(run: CaseRun): string {
  const lines = [`  apply: ${describeApply(run.apply)}`];
  for (const note of run.notes) lines.push(`  note: ${note}`);
  if (run.changes.length > 0) lines.push(formatChanges(run.changes));
  return lines.join('\n');
}

// ---------------------------------------------------------------------------------------------------------------

interface Planted {
  what: string;
  sql: string;
  /** Facets the harness must report (at least these). */
  facets: Facet[];
  plant?: (h: DifferentialHarness) => Promise<void>;
  unplant?: (h: DifferentialHarness) => Promise<void>;
}

const PLANTED_FILE = 'forge-difftest-planted';
/** Where the self-test plants PLANTED_FILE: each must be seen on its own. */
const plantDirs = (dataDir: string) => [dataDir, '/tmp', ...(existsSync('/dev/shm') ? ['/dev/shm'] : [])];

/** One planted change per facet: each must be seen. Most are bypasses of the judge as it stood when this was written. */
const planted: Planted[] = [
  {
    what: 'setval on a core sequence in a DEFAULT',
    sql: "ALTER TABLE users ADD COLUMN agent_x bigint DEFAULT setval('orders_id_seq', 1)",
    facets: ['sequences'],
  },
  {
    what: "a fake notification on Forge's tools channel",
    sql: "ALTER TABLE users ADD COLUMN agent_n int DEFAULT (pg_notify('forge_tools', 'x') IS NULL)::int",
    facets: ['notifications'],
  },
  // Forge now runs each migration in a session it closes afterwards (ForgeDatabase.isolatedSession), so what a
  // set_config(..., false), an advisory lock or a temporary table in a migration leaves in its session never reaches
  // the pool: the hostile migration runs, and the same state is planted on Forge's pool as a regression would leave it.
  {
    what: "a setting left on Forge's pool (set_config(..., false))",
    sql: "ALTER TABLE users ADD COLUMN agent_s text DEFAULT set_config('lock_timeout', '4321ms', false)",
    facets: ['session'],
    plant: (h) => h.forgeQuery("SELECT set_config('lock_timeout', '4321ms', false)"),
  },
  {
    what: "Forge's pool left read-only",
    sql: "ALTER TABLE users ADD COLUMN agent_ro text DEFAULT set_config('default_transaction_read_only', 'on', false)",
    facets: ['session'],
    plant: (h) => h.forgeQuery("SELECT set_config('default_transaction_read_only', 'on', false)"),
  },
  {
    what: 'a session advisory lock',
    sql: 'ALTER TABLE users ADD COLUMN agent_l bool DEFAULT pg_try_advisory_lock(4242)',
    facets: ['advisory locks'],
    plant: (h) => h.forgeQuery('SELECT pg_advisory_lock(4242)'),
  },
  { what: 'large objects', sql: "ALTER TABLE users ADD COLUMN agent_o oid DEFAULT lo_from_bytea(0, 'x')", facets: ['large objects'] },
  {
    what: 'a non-agent type by the multirange side door',
    sql: 'CREATE TYPE agent_r AS RANGE (subtype = int4, multirange_type_name = orders_archive)',
    facets: ['catalog'],
  },
  { what: "a core column's default", sql: "ALTER TABLE users ALTER COLUMN name SET DEFAULT 'anon'", facets: ['catalog', 'pg_dump'] },
  { what: 'a comment on a core table', sql: "COMMENT ON TABLE users IS 'mine now'", facets: ['catalog', 'pg_dump'] },
  { what: "an agent_ column on Forge's own events table", sql: 'ALTER TABLE events ADD COLUMN agent_z int', facets: ['catalog', 'pg_dump'] },
  {
    what: 'a trigger named agent_ on a core table',
    sql: 'CREATE TRIGGER agent_t BEFORE INSERT ON users FOR EACH ROW EXECUTE FUNCTION suppress_redundant_updates_trigger()',
    facets: ['catalog', 'pg_dump'],
  },
  { what: 'a constant unique index on a core table', sql: 'CREATE UNIQUE INDEX agent_one ON orders ((1)) WHERE id < 0', facets: ['reach'] },
  {
    what: 'a cascading foreign key on a core table',
    sql: 'ALTER TABLE users ADD COLUMN agent_ref bigint REFERENCES orders (id) ON DELETE CASCADE',
    facets: ['reach'],
  },
  {
    what: 'a CHECK with now() on a core table',
    sql: "ALTER TABLE orders ADD CONSTRAINT agent_fresh CHECK (placed_at > now() - interval '100 years')",
    facets: ['reach'],
  },
  { what: 'a view over a system catalog', sql: 'CREATE VIEW agent_roles AS SELECT rolname FROM pg_authid', facets: ['reach'] },
  { what: 'core rows deleted', sql: "DELETE FROM products WHERE sku = 'b-2'", facets: ['rows'] },
  { what: 'core rows rewritten', sql: "UPDATE users SET name = 'x' WHERE id = 3", facets: ['rows'] },
  { what: 'a forged event', sql: "INSERT INTO events (kind, subject) VALUES ('tool.activated', 'x')", facets: ['rows', 'sequences'] },
  {
    what: "a temporary table left on Forge's pool",
    sql: 'CREATE TEMP TABLE agent_tmp (x int)',
    facets: ['session'],
    plant: (h) => h.forgeQuery('CREATE TEMP TABLE agent_tmp (x int)'),
  },
  {
    what: 'a setval that survives the rollback of a failed migration',
    sql: "ALTER TABLE users ADD COLUMN agent_y bigint DEFAULT setval('invoice_numbers', 1); CREATE TABLE agent_bad (v nope_type)",
    facets: ['sequences'],
  },
  {
    what: 'the application connection killed',
    sql: "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'forge-difftest-app' AND datname = current_database()",
    facets: ['other sessions'],
  },
  // The apply ends in a connection error, which Forge retries: not a verdict. (With src/db as of this writing the
  // killed, checked-out pool client also emits an 'error' no one listens to, which the harness reports too.)
  { what: "the migration's own session killed", sql: 'SELECT pg_terminate_backend(pg_backend_pid())', facets: ['apply'] },
  {
    what: 'a file where the server could have written it (planted by the test)',
    sql: 'CREATE TABLE agent_marker (id int)',
    facets: ['files'],
    async plant(h) {
      const files = h.files;
      if (!files) return;
      // /dev/shm too, where the watch passes over the segments of PostgreSQL and of libfaketime: not over this.
      for (const dir of plantDirs(files.dataDir)) {
        const file = path.join(dir, PLANTED_FILE);
        writeFileSync(file, 'x');
        chownSync(file, files.serverUid, -1);
      }
    },
    async unplant(h) {
      const files = h.files;
      if (!files) return;
      for (const dir of plantDirs(files.dataDir)) rmSync(path.join(dir, PLANTED_FILE), { force: true });
    },
  },
];

/** Migrations a well-behaved agent writes, covering what the harness must let through: none may show a change. */
const controls: Array<{ what: string; sql: string; outcome: 'applied' | 'failed' }> = [
  {
    what: 'an agent table with a serial key, a cascading FK to a core table, a CHECK and a unique constraint',
    sql:
      'CREATE TABLE agent_notes (id bigserial PRIMARY KEY, user_id int NOT NULL REFERENCES users (id) ON DELETE CASCADE, ' +
      "body text NOT NULL CHECK (body <> ''), created_at timestamptz NOT NULL DEFAULT now(), UNIQUE (user_id, created_at))",
    outcome: 'applied',
  },
  {
    what: 'agent columns on a core table with a default, NOT NULL, CHECK, comment and an index',
    sql:
      "ALTER TABLE users ADD COLUMN agent_tier text NOT NULL DEFAULT 'free' CHECK (agent_tier IN ('free', 'pro'));\n" +
      "CREATE INDEX agent_users_tier ON users (agent_tier);\nCOMMENT ON COLUMN users.agent_tier IS 'plan'",
    outcome: 'applied',
  },
  {
    what: 'serial, identity and uuid agent columns on a core table',
    sql:
      'ALTER TABLE orders ADD COLUMN agent_seq serial, ADD COLUMN agent_uid uuid DEFAULT gen_random_uuid(), ' +
      'ADD COLUMN agent_n int GENERATED ALWAYS AS IDENTITY',
    outcome: 'applied',
  },
  {
    what: 'a core column referencing an agent table with ON DELETE SET NULL',
    sql: 'CREATE TABLE agent_tags (id int PRIMARY KEY, label text);\nALTER TABLE orders ADD COLUMN agent_tag int REFERENCES agent_tags (id) ON DELETE SET NULL',
    outcome: 'applied',
  },
  {
    what: 'enum, domain and range types used by an agent table',
    sql:
      "CREATE TYPE agent_mood AS ENUM ('ok', 'meh');\nCREATE DOMAIN agent_pos AS int CHECK (VALUE > 0);\n" +
      'CREATE TYPE agent_span AS RANGE (subtype = int4);\nCREATE TABLE agent_x (m agent_mood, p agent_pos, s agent_span)',
    outcome: 'applied',
  },
  {
    what: 'a view over core tables, a sequence, an expression index on a core table',
    sql:
      'CREATE VIEW agent_big_orders AS SELECT id, total FROM orders WHERE total > 50;\nCREATE SEQUENCE agent_counter START 10;\n' +
      'CREATE INDEX agent_users_lower_email ON users (lower(email))',
    outcome: 'applied',
  },
  {
    what: 'an agent table altered every allowed way',
    sql:
      'CREATE TABLE agent_a (id int PRIMARY KEY, v text);\nALTER TABLE agent_a ADD COLUMN w int;\nALTER TABLE agent_a RENAME COLUMN v TO v2;\n' +
      'ALTER TABLE agent_a ALTER COLUMN w TYPE bigint;\nCREATE INDEX agent_a_w ON agent_a (w);\nDROP INDEX agent_a_w;\n' +
      'ALTER TABLE agent_a ADD CONSTRAINT agent_a_w_pos CHECK (w > 0);\nALTER TABLE agent_a DROP CONSTRAINT agent_a_w_pos;\n' +
      "COMMENT ON TABLE agent_a IS 'scratch'",
    outcome: 'applied',
  },
  { what: 'an agent copy of a core table (LIKE ... INCLUDING ALL)', sql: 'CREATE TABLE agent_like (LIKE users INCLUDING ALL)', outcome: 'applied' },
  { what: 'a migration PostgreSQL refuses', sql: 'CREATE TABLE agent_typo (v nope_type)', outcome: 'failed' },
];

describePg('the differential harness sees every facet', () => {
  let harness: DifferentialHarness;

  beforeAll(async () => {
    harness = await DifferentialHarness.open({
      adminUrl: DATABASE_URL ?? '',
      limits,
      createActivities: await permissiveActivities(),
      fixtureSql: readFixture(),
      log: (m) => console.log(`differential harness: ${m}`),
    });
  }, CASE_TIMEOUT_MS);

  afterAll(async () => {
    await harness?.close();
  });

  test.each(controls)(
    'lets through: $what',
    async ({ sql, outcome }) => {
      const run = await harness.runCase(sql);
      if (run.apply.kind !== outcome || run.changes.length > 0) {
        throw new Error(`expected ${outcome} and no change, got:\n  SQL: ${showSql(sql)}\n${describeRun(run)}`);
      }
      // Dropping the agent's objects afterwards must be invisible to every facet, or the next case would inherit noise.
      const leftover = await harness.verifyRestored();
      if (leftover.length > 0) throw new Error(`the cleanup after the case was not invisible:\n${formatChanges(leftover)}`);
    },
    CASE_TIMEOUT_MS,
  );

  test.each(planted)(
    'sees: $what',
    async (p) => {
      if (p.facets.includes('files') && !harness.files) return; // skipped facet, logged at setup
      const run = await harness.runCase(p.sql, {
        plant: () => p.plant?.(harness) ?? Promise.resolve(),
        unplant: () => p.unplant?.(harness) ?? Promise.resolve(),
      });
      if (VERBOSE) console.log(`sees: ${p.what}\n${describeRun(run)}`);
      const seen = new Set(run.changes.map((c) => c.facet));
      const missed = p.facets.filter((f) => !seen.has(f));
      if (missed.length > 0) {
        throw new Error(`the harness missed ${missed.join(', ')}:\n  SQL: ${showSql(p.sql)}\n${describeRun(run)}`);
      }
      if (p.facets.includes('files') && harness.files) {
        const seenFiles = formatChanges(run.changes);
        const unseen = plantDirs(harness.files.dataDir).filter((dir) => !seenFiles.includes(path.join(dir, PLANTED_FILE)));
        if (unseen.length > 0) throw new Error(`the harness missed the file planted in ${unseen.join(', ')}:\n${describeRun(run)}`);
      }
    },
    CASE_TIMEOUT_MS,
  );

  test(
    'after all that, a legitimate migration still applies cleanly',
    async () => {
      const run = await harness.runCase('CREATE TABLE agent_after (id int PRIMARY KEY)');
      expect({ apply: run.apply.kind, changes: formatChanges(run.changes) }).toEqual({ apply: 'applied', changes: '' });
    },
    CASE_TIMEOUT_MS,
  );
});

// ---------------------------------------------------------------------------------------------------------------

interface CorpusCase {
  label: string;
  kind: 'mustReject' | 'legitimate';
  sql: string;
  why: string;
  class?: string;
}

const corpus: CorpusCase[] = [
  ...mustReject.map((c, i) => ({ label: `mustReject[${i}] ${c.class}: ${c.why}`, kind: 'mustReject' as const, sql: c.sql, why: c.why, class: c.class })),
  ...legitimate.map((c, i) => ({ label: `legitimate[${i}]: ${c.why}`, kind: 'legitimate' as const, sql: c.sql, why: c.why })),
];

function header(c: CorpusCase, verdict: string): string {
  return `${c.label}\n  SQL: ${showSql(c.sql)}\n  judge: ${verdict}`;
}

describePg('the red-team corpus, applied on real PostgreSQL', () => {
  let harness: DifferentialHarness;
  let started = 0;
  const bypasses: string[] = [];
  const legitimateFailures: string[] = [];

  beforeAll(async () => {
    started = Date.now();
    harness = await DifferentialHarness.open({
      adminUrl: DATABASE_URL ?? '',
      limits,
      createActivities: createMigrationActivities,
      fixtureSql: readFixture(),
      channels: channelsIn(corpus.map((c) => c.sql)),
      log: (m) => console.log(`differential test: ${m}`),
    });
  }, CASE_TIMEOUT_MS);

  afterAll(async () => {
    if (harness) {
      const t = harness.timing;
      const parts = Object.entries(t.snapshotParts)
        .map(([k, ms]) => `${k} ${Math.round(ms)} ms`)
        .join(', ');
      console.log(
        `differential test: ${corpus.length} case(s), ${t.cases} applied in ${Math.round((Date.now() - started) / 1000)} s ` +
          `(apply ${Math.round(t.applyMs)} ms, records ${Math.round(t.snapshotMs)} ms [${parts}], cleanup ${Math.round(t.cleanupMs)} ms)`,
      );
    }
    await harness?.close();
  });

  if (corpus.length === 0) test.todo('corpus.ts holds no case yet');
  else {
    test.each(corpus)(
      '$label',
      async (c) => {
        let report: PolicyReport;
        try {
          report = await checkMigration(c.sql, { schema: 'public', coreTables: FIXTURE_CORE_TABLES });
        } catch (err) {
          const message = `${header(c, `threw ${(err as Error).stack ?? String(err)}`)}`;
          if (c.kind === 'legitimate') legitimateFailures.push(message);
          else bypasses.push(`${message}\n  (the judge must never throw)`);
          throw new Error(message);
        }
        if (!report.accepted) {
          if (c.kind === 'mustReject') return;
          const refused = report.statements.find((s) => !s.accepted);
          const message = header(c, `rejected: statement ${refused?.index} rule ${refused?.rule}: ${refused?.message}`);
          legitimateFailures.push(message);
          throw new Error(message);
        }
        // Listed before it runs, so that a case that breaks the harness is still named among the bypasses.
        const bypass = c.kind === 'mustReject' ? bypasses.push(header(c, 'ACCEPTED (bypass)')) - 1 : -1;
        const run = await harness.runCase(c.sql);
        if (VERBOSE) console.log(`${header(c, 'accepted')}\n${describeRun(run)}`);
        const problems: string[] = [];
        if (c.kind === 'legitimate' && run.apply.kind !== 'applied') problems.push('a legitimate migration must apply');
        if (run.changes.length > 0) problems.push(`changed ${[...new Set(run.changes.map((x) => x.facet))].join(', ')}`);
        if (c.kind === 'mustReject') {
          bypasses[bypass] += `\n${describeRun(run)}${run.changes.length === 0 ? '\n  (no change observed)' : ''}`;
        }
        if (problems.length > 0) {
          const message = `${header(c, 'accepted')}\n  ${problems.join('; ')}\n${describeRun(run)}`;
          if (c.kind === 'legitimate') legitimateFailures.push(message);
          throw new Error(message);
        }
      },
      CASE_TIMEOUT_MS,
    );
  }

  test('no must-reject case gets past the judge', () => {
    if (bypasses.length > 0) {
      throw new Error(`${bypasses.length} of ${mustReject.length} must-reject case(s) accepted by the judge:\n\n${bypasses.join('\n\n')}`);
    }
  });

  test('every legitimate case is accepted, applied, and changes nothing but agent objects', () => {
    if (legitimateFailures.length > 0) {
      throw new Error(`${legitimateFailures.length} of ${legitimate.length} legitimate case(s) failed:\n\n${legitimateFailures.join('\n\n')}`);
    }
  });

  test('the built-in catalogues are whole at the end of the run', async () => {
    const changes = await harness.builtInChanges();
    if (changes.length > 0) throw new Error(formatChanges(changes));
  });
});
