/**
 * The differential test of the application's later writes (issue 27; SCHEMA_POLICY.md "Round three"). What the agent
 * attaches to a core table runs later, on the application's own writes and under the application's role: a DEFAULT on
 * every insert, an index expression or predicate on every insert and update, a CHECK on every write, a sequence
 * behind a default. So after every corpus case the judge accepts (must-reject cases it lets through, and every
 * legitimate case), applied as Forge applies it, the APPLICATION's role — a plain login role that is neither Forge's
 * nor the tables' owner — inserts, updates, upserts and deletes rows in every core table with edge values of each
 * column's type (writes generated from the catalog, app-writes.ts; none written for an attack), and each write must
 * end as it did before the migration (success, or the same SQLSTATE) and take no longer than the bound
 * (writes-harness.ts TIMING: max(100 ms, 5 × its baseline), confirmed by three more runs spread over 3 s).
 *
 * Two worlds, each a PostgreSQL cluster of the test's own, run every case:
 *  - today's clock, Forge connected as an ordinary role that owns the application's tables; the application's
 *    sessions in another DateStyle and TimeZone than Forge's (`SQL, DMY`, Asia/Kolkata);
 *  - a clock that runs a year ahead while the application writes (libfaketime, Debian's faketime package; the
 *    migration itself is applied at the true time), Forge connected as a superuser running agent SQL as
 *    forge_agent, the tables owned by app_owner: time bombs (a DEFAULT that divides by zero after a date, a CHECK
 *    paired with DEFAULT now()) go off here.
 *
 * The first describe block proves the harness sees each class, with the judge's verdict overridden (a DEFAULT that
 * divides by zero for every role but the owners, index expressions that raise, a time bomb only a year ahead shows,
 * a slow default, a sequence the application may not use or that runs out) and that well-behaved migrations show
 * nothing. The second runs the red-team corpus.
 *
 * Needs DATABASE_URL (the PostgreSQL suites run where CI provides a server), PostgreSQL's server binaries (initdb)
 * and libfaketime; otherwise skipped with the reason.
 */
import { createMigrationActivities } from '../../../src/activities/migration-activities';
import { checkMigration, type PolicyReport } from '../../../src/policy';
import { describeIf } from '../../helpers/skip';
import { legitimate, mustReject } from './corpus';
import { readFixture } from './harness';
import { permissiveActivities } from './permissive-activities';
import { describeApply, describeDifference, findLibfaketime, postgresBinDir, TIMING, WriteWorld, type WorldRun } from './writes-harness';
import { FIXTURE_CORE_TABLES } from './core-fixture';

const DATABASE_URL = process.env.DATABASE_URL;
const BIN = postgresBinDir();
const LIBFAKETIME = findLibfaketime();
const describeWrites = describeIf(
  DATABASE_URL && BIN && LIBFAKETIME,
  !DATABASE_URL
    ? 'DATABASE_URL is not set (PostgreSQL only; CI sets it)'
    : !BIN
      ? 'no PostgreSQL server binaries (initdb) under /usr/lib/postgresql'
      : "no libfaketime (Debian's faketime package) for the clock a year ahead",
);

/** As the red-team differential test: Forge's defaults shortened so that a case that waits costs seconds. */
const limits = { lockTimeoutMs: 2_000, statementTimeoutMs: 5_000 };
const SETUP_TIMEOUT_MS = 180_000;
const CASE_TIMEOUT_MS = 180_000;
const VERBOSE = !!process.env.DIFFTEST_VERBOSE;
const AHEAD = '+365d';

/** A date a month from now: a time bomb set for it is quiet today and goes off on the clock a year ahead. */
const SOON = new Date(Date.now() + 30 * 86_400_000).toISOString().slice(0, 10);

function showSql(text: string): string {
  const head = text.slice(0, 300);
  return (head + (text.length > 300 ? ` … (${text.length} characters)` : '')).replace(/\n/g, '\n       ');
}

function describeRun(run: WorldRun): string {
  const lines = [`  [${run.world}] apply: ${describeApply(run.apply)}; writes ${run.writesMs} ms`];
  for (const d of run.differences) lines.push(`    ${describeDifference(d)}`);
  if (run.notRun > 0) lines.push(`    (${run.notRun} more writes not run)`);
  for (const n of run.notes) lines.push(`    note: ${n}`);
  return lines.join('\n');
}

describeWrites("the application's later writes", () => {
  /** Today's clock (ordinary role), then the clock ahead (superuser): runBoth answers in this order. */
  let worlds: WriteWorld[] = [];
  const log = (m: string) => console.log(`write differential: ${m}`);

  beforeAll(async () => {
    const createActivities = await permissiveActivities();
    const fixtureSql = readFixture();
    const opened = await Promise.allSettled([
      WriteWorld.open({
        label: 'today, Forge as an ordinary role',
        mode: 'ordinary',
        appSettings: { DateStyle: 'SQL, DMY', TimeZone: 'Asia/Kolkata' },
        fixtureSql,
        limits,
        createActivities,
        log,
      }),
      WriteWorld.open({
        label: `clock ${AHEAD} while the application writes, Forge as a superuser (forge_agent)`,
        mode: 'superuser',
        clockAhead: AHEAD,
        libfaketime: LIBFAKETIME,
        fixtureSql,
        limits,
        createActivities,
        log,
      }),
    ]);
    worlds = opened.flatMap((o) => (o.status === 'fulfilled' ? [o.value] : []));
    const failed = opened.find((o): o is PromiseRejectedResult => o.status === 'rejected');
    if (failed) throw failed.reason;
    log(`timing bound per write: max(${TIMING.FLOOR_MS} ms, ${TIMING.FACTOR} × its baseline median), confirmed after ${TIMING.RETRY_PAUSES_MS.join(', ')} ms`);
  }, SETUP_TIMEOUT_MS);

  afterAll(async () => {
    for (const w of worlds) {
      const t = w.timing;
      log(
        `[${w.label}] setup ${Math.round(t.setupMs / 1000)} s; ${t.cases} case(s): apply ${Math.round(t.applyMs / 1000)} s, ` +
          `writes ${Math.round(t.writesMs / 1000)} s (${w.writes.length} per case, ${t.retries} timing re-run(s)), ` +
          `cleanup ${Math.round(t.cleanupMs / 1000)} s, ${t.rebuilds} fresh copies`,
      );
    }
    await Promise.all(worlds.map((w) => w.close()));
  });

  const runBoth = (sql: string, maxDifferences?: number) => Promise.all(worlds.map((w) => w.runCase(sql, maxDifferences)));

  test('the writes cover every core table and column, and the baseline has both outcomes', () => {
    for (const w of worlds) {
      expect(w.tables.map((t) => t.name).sort()).toEqual(['orders', 'products', 'users']);
      for (const t of w.tables) {
        for (const c of t.columns) {
          const touching = w.writes.filter((x) => x.table === t.name && (x.id.includes(` ${c.name}=`) || x.id.endsWith(' rows in one statement')));
          expect({ table: t.name, column: c.name, writes: touching.length > 1 }).toEqual({ table: t.name, column: c.name, writes: true });
        }
      }
      // Edge values that the fixture refuses (NOT NULL, out of range, too long for a unique index) fail in the
      // baseline too: the comparison is per write, failures included.
      const failures = w.baselineFailures();
      expect(failures.size).toBeGreaterThan(0);
      log(`[${w.label}] baseline failures by SQLSTATE: ${[...failures].map(([code, n]) => `${code} × ${n}`).join(', ')}`);
    }
  });

  describe('the harness sees each class (judge overridden)', () => {
    interface Planted {
      what: string;
      sql: string;
      /** In which world the writes must change: both, or only on the clock a year ahead. */
      seen: 'both' | 'ahead only';
      slow?: boolean;
    }
    const planted: Planted[] = [
      {
        what: 'a DEFAULT that divides by zero for every role but the owners and Forge',
        sql: "ALTER TABLE users ADD COLUMN agent_rb int DEFAULT (1 / (current_user IN ('forge', 'forge_agent', 'app_owner', 'postgres'))::int)",
        seen: 'both',
      },
      {
        what: 'an index expression that divides by zero on a refund (a partial index no existing row is in)',
        sql: 'CREATE INDEX agent_refund_idx ON orders ((1 / (total - total))) WHERE total < 0',
        seen: 'both',
      },
      {
        what: 'a failing cast in an index expression, for an empty status only',
        sql: "CREATE INDEX agent_status_int_idx ON orders ((status::int)) WHERE status = ''",
        seen: 'both',
      },
      {
        what: `a time bomb DEFAULT that divides by zero after ${SOON}`,
        sql: `ALTER TABLE orders ADD COLUMN agent_tb int DEFAULT (1 / CASE WHEN now() > '${SOON}' THEN 0 ELSE 1 END)`,
        seen: 'ahead only',
      },
      {
        what: `a CHECK paired with DEFAULT now() that fails after ${SOON}`,
        sql: `ALTER TABLE orders ADD COLUMN agent_seen timestamptz DEFAULT now() CHECK (agent_seen < '${SOON}')`,
        seen: 'ahead only',
      },
      {
        what: 'a slow DEFAULT (an immutable function that spins for a few hundred milliseconds)',
        sql:
          'CREATE FUNCTION agent_spin() RETURNS int LANGUAGE plpgsql IMMUTABLE AS $$ BEGIN FOR i IN 1..30000000 LOOP END LOOP; RETURN 0; END $$;\n' +
          'ALTER TABLE products ADD COLUMN agent_slow int DEFAULT agent_spin()',
        seen: 'both',
        slow: true,
      },
      {
        what: "an agent sequence behind a core DEFAULT, which the application's role may not use",
        sql: "CREATE SEQUENCE agent_users_seq;\nALTER TABLE users ADD COLUMN agent_no bigint DEFAULT nextval('agent_users_seq')",
        seen: 'both',
      },
      {
        what: 'an agent sequence behind a core DEFAULT that runs out (usable by everyone)',
        sql:
          'CREATE SEQUENCE agent_orders_seq MAXVALUE 300;\nGRANT USAGE ON SEQUENCE agent_orders_seq TO PUBLIC;\n' +
          "ALTER TABLE orders ADD COLUMN agent_no bigint DEFAULT nextval('agent_orders_seq')",
        seen: 'both',
      },
    ];

    const controls: Array<{ what: string; sql: string }> = [
      {
        what: 'agent columns on core tables with literal and now() defaults, NOT NULL and a CHECK',
        sql:
          "ALTER TABLE users ADD COLUMN agent_tier text NOT NULL DEFAULT 'free' CHECK (agent_tier IN ('free', 'pro'));\n" +
          'ALTER TABLE orders ADD COLUMN agent_reviewed_at timestamptz DEFAULT now(), ADD COLUMN agent_flag boolean NOT NULL DEFAULT false',
      },
      {
        what: 'eight agent indexes on orders (the cap): what every insert maintains',
        sql: Array.from({ length: 8 }, (_, i) => `CREATE INDEX agent_orders_n${i}_idx ON orders (${['id', 'user_id', 'placed_at', 'total'][i % 4]}, id)`).join(
          ';\n',
        ),
      },
      {
        what: 'an agent table referencing core tables',
        sql: 'CREATE TABLE agent_notes (id bigserial PRIMARY KEY, user_id int REFERENCES users (id) ON DELETE CASCADE, body text)',
      },
    ];

    test.each(planted)(
      'sees: $what',
      async (p) => {
        const [inToday, inAhead] = await runBoth(p.sql, 1);
        const report = `  SQL: ${showSql(p.sql)}\n${describeRun(inToday)}\n${describeRun(inAhead)}`;
        if (VERBOSE) console.log(`sees: ${p.what}\n${report}`);
        for (const run of [inToday, inAhead]) {
          if (run.apply.kind !== 'applied') throw new Error(`the planted migration did not apply:\n${report}`);
        }
        const seenToday = inToday.differences.length > 0;
        const seenAhead = inAhead.differences.length > 0;
        if (!seenAhead || seenToday !== (p.seen === 'both')) {
          throw new Error(`expected a change ${p.seen === 'both' ? 'in both worlds' : 'on the clock ahead only'}:\n${report}`);
        }
        if (p.slow && !inAhead.differences.some((d) => d.slow || (!d.after.ok && d.after.code === '57014'))) {
          throw new Error(`expected a write slower than its bound:\n${report}`);
        }
      },
      CASE_TIMEOUT_MS,
    );

    test.each(controls)(
      'lets through: $what',
      async (c) => {
        const runs = await runBoth(c.sql);
        const report = `  SQL: ${showSql(c.sql)}\n${runs.map(describeRun).join('\n')}`;
        if (VERBOSE) console.log(`lets through: ${c.what}\n${report}`);
        if (runs.some((r) => r.apply.kind !== 'applied' || r.differences.length > 0)) throw new Error(`expected applied and no change:\n${report}`);
      },
      CASE_TIMEOUT_MS,
    );
  });

  describe('the red-team corpus', () => {
    interface CorpusCase {
      label: string;
      kind: 'mustReject' | 'legitimate';
      sql: string;
      why: string;
    }
    const corpus: CorpusCase[] = [
      ...mustReject.map((c, i) => ({ label: `mustReject[${i}] ${c.class}: ${c.why}`, kind: 'mustReject' as const, sql: c.sql, why: c.why })),
      ...legitimate.map((c, i) => ({ label: `legitimate[${i}]: ${c.why}`, kind: 'legitimate' as const, sql: c.sql, why: c.why })),
    ];
    const harms: string[] = [];
    /** Accepted cases that did not apply in a world (their writes met the fixture unchanged there). */
    const notApplied: string[] = [];
    let applied = 0;
    let started = 0;

    beforeAll(() => {
      for (const w of worlds) w.useActivities(createMigrationActivities);
      started = Date.now();
    });

    afterAll(() => {
      log(
        `${corpus.length} case(s), ${applied} accepted (${notApplied.length} of them not applied in a world), ${harms.length} changed the writes, ` +
          `${Math.round((Date.now() - started) / 1000)} s`,
      );
      for (const n of notApplied) log(`accepted but not applied: ${n}`);
    });

    test.each(corpus)(
      '$label',
      async (c) => {
        let report: PolicyReport;
        try {
          report = await checkMigration(c.sql, { schema: 'public', coreTables: FIXTURE_CORE_TABLES });
        } catch {
          return; // the judge must never throw: differential.test.ts says so; here it only means nothing is applied
        }
        if (!report.accepted) return;
        applied++;
        const runs = await runBoth(c.sql);
        for (const r of runs) if (r.apply.kind !== 'applied') notApplied.push(`${c.label} [${r.world}]: ${describeApply(r.apply)}`);
        const changed = runs.filter((r) => r.differences.length > 0);
        const message = `${c.label}\n  SQL: ${showSql(c.sql)}\n  judge: accepted (${c.kind === 'mustReject' ? 'a bypass' : 'legitimate'})\n${runs.map(describeRun).join('\n')}`;
        if (VERBOSE) console.log(message);
        if (changed.length > 0) {
          harms.push(message);
          throw new Error(`the application's writes changed:\n${message}`);
        }
      },
      CASE_TIMEOUT_MS,
    );

    test("no accepted case changes the application's writes", () => {
      if (harms.length > 0) throw new Error(`${harms.length} accepted case(s) changed the application's writes:\n\n${harms.join('\n\n')}`);
    });
  });
});
