import { checkMigration, decodeMigration, loadPolicyParser } from '../../src/policy';
import type { PolicyReport } from '../../src/policy';
import { MAX_AGENT_COLUMNS_PER_CORE_TABLE, MAX_AGENT_INDEXES_PER_CORE_TABLE } from '../../src/contract/limits';

/**
 * SCHEMA_POLICY.md "Round three" rule by rule (the red-team corpus holds the attacks; these are the edges): what the
 * agent may attach to a core table, the caps counted with what a table has already, renames and row types, and text
 * that is not UTF-8.
 */

beforeAll(async () => {
  await loadPolicyParser();
});

/** The rule of each refused statement, or of the migration-wide problem; [] when accepted. */
function refusedRules(report: PolicyReport): string[] {
  if (report.problem) return [report.problem.rule];
  return report.statements.filter((s) => !s.accepted).map((s) => s.rule ?? '?');
}

async function rules(sql: string, opts = {}): Promise<string[]> {
  return refusedRules(await checkMigration(sql, opts));
}

describe('core column DEFAULTs: a literal, cast to the column type if you like, or a niladic time value', () => {
  test.each([
    "ALTER TABLE users ADD COLUMN agent_a text DEFAULT 'en'",
    'ALTER TABLE users ADD COLUMN agent_a int DEFAULT -1',
    'ALTER TABLE users ADD COLUMN agent_a numeric DEFAULT 1.5',
    'ALTER TABLE users ADD COLUMN agent_a boolean DEFAULT false',
    'ALTER TABLE users ADD COLUMN agent_a text DEFAULT NULL',
    `ALTER TABLE users ADD COLUMN agent_a jsonb DEFAULT '{"beta":false}'::jsonb`,
    "ALTER TABLE users ADD COLUMN agent_a interval DEFAULT interval '1 day'",
    "ALTER TABLE users ADD COLUMN agent_a date DEFAULT DATE '2026-01-01'",
    'ALTER TABLE users ADD COLUMN agent_a timestamptz DEFAULT now()',
    'ALTER TABLE users ADD COLUMN agent_a timestamptz DEFAULT pg_catalog.now()',
    'ALTER TABLE users ADD COLUMN agent_a timestamptz DEFAULT CURRENT_TIMESTAMP(3)',
    'ALTER TABLE users ADD COLUMN agent_a date DEFAULT CURRENT_DATE',
    'ALTER TABLE users ADD COLUMN agent_a timestamp DEFAULT LOCALTIMESTAMP',
    'ALTER TABLE users ADD COLUMN agent_a date DEFAULT now()::date',
    'ALTER TABLE users ADD COLUMN agent_a timestamptz DEFAULT transaction_timestamp()',
  ])('accepts %s', async (sql) => {
    expect(await rules(sql)).toEqual([]);
  });

  test.each([
    ['ALTER TABLE users ADD COLUMN agent_a int DEFAULT 1 + 1', 'expression'],
    ['ALTER TABLE users ADD COLUMN agent_a bigint DEFAULT 1::bigint', 'expression'],
    ['ALTER TABLE users ADD COLUMN agent_a text DEFAULT current_user', 'expression'],
    ["ALTER TABLE users ADD COLUMN agent_a text DEFAULT 'x'::text::int", 'expression'],
    ["ALTER TABLE users ADD COLUMN agent_a text DEFAULT lower('X')", 'lower()'],
    ['ALTER TABLE users ADD COLUMN agent_a timestamptz DEFAULT clock_timestamp()', 'ACCESS EXCLUSIVE'],
    ['ALTER TABLE users ADD COLUMN agent_a int DEFAULT now()::int', 'expression'],
    ["ALTER TABLE users ADD COLUMN agent_a int DEFAULT nextval('agent_s')", 'USAGE'],
    ['ALTER TABLE users ADD agent_a int, ADD agent_b int DEFAULT random()::int', 'random()'],
  ])('refuses %s, saying what to do instead', async (sql, says) => {
    const report = await checkMigration(sql);
    expect(refusedRules(report)).toEqual(['core-default']);
    const message = report.statements[0].message ?? '';
    expect(message).toContain(says);
    expect(message).toContain('\'{"beta":false}\'::jsonb');
    expect(message).toContain('agent_ side table keyed by the core row');
  });

  test('an agent table keeps any allowed DEFAULT: nextval of its own sequence, expressions, gen_random_uuid()', async () => {
    expect(
      await rules(
        "CREATE SEQUENCE agent_s; CREATE TABLE agent_t (id bigint DEFAULT nextval('agent_s'), n int DEFAULT 1 + 1, u uuid DEFAULT gen_random_uuid())",
      ),
    ).toEqual([]);
  });
});

describe('core index expressions and predicates: only total, linear-time functions and operators', () => {
  test.each([
    'CREATE INDEX agent_i ON users (lower(email))',
    'CREATE INDEX agent_i ON users (upper(btrim(name)), char_length(email))',
    'CREATE INDEX agent_i ON users (left(email, 16), right(email, -3))',
    "CREATE INDEX agent_i ON orders (date_trunc('hour', placed_at AT TIME ZONE 'UTC'))",
    "CREATE INDEX agent_i ON orders ((agent_meta -> 'a' ->> 0))",
    "CREATE INDEX agent_i ON orders (id) WHERE status IN ('new', 'paid') AND total BETWEEN 0 AND 100",
    "CREATE INDEX agent_i ON orders (id) WHERE status IS DISTINCT FROM 'x' OR NOT (total IS NULL) OR active IS TRUE",
    "CREATE INDEX agent_i ON orders ((coalesce(status, '')), (nullif(status, '')), (greatest(total, 0)))",
    "CREATE INDEX agent_i ON orders ((CASE WHEN total > 0 THEN 'pos' ELSE 'other' END))",
    "CREATE INDEX agent_i ON orders (id) WHERE placed_at > '2026-01-01'::timestamptz",
    'CREATE INDEX agent_i ON users (name COLLATE "C" text_pattern_ops)',
    'CREATE INDEX agent_i ON users USING hash (email)',
  ])('accepts %s', async (sql) => {
    expect(await rules(sql)).toEqual([]);
  });

  test.each([
    ['CREATE INDEX agent_i ON orders ((total / 2))', '/'],
    ['CREATE INDEX agent_i ON orders ((- total))', 'prefix operator -'],
    ['CREATE INDEX agent_i ON orders ((status::int))', 'cast'],
    ['CREATE INDEX agent_i ON orders ((CAST(status AS int)))', 'cast'],
    ['CREATE INDEX agent_i ON orders ((abs(user_id)))', 'abs'],
    ["CREATE INDEX agent_i ON orders ((date_trunc('year', placed_at AT TIME ZONE 'UTC')))", "'day'"],
    ["CREATE INDEX agent_i ON orders ((date_trunc(status, placed_at AT TIME ZONE 'UTC')))", 'date_trunc'],
    ["CREATE INDEX agent_i ON orders ((placed_at AT TIME ZONE 'Pacific/Kiritimati'))", 'timezone'],
    ['CREATE INDEX agent_i ON users ((left(email, id)))', 'integer literal'],
    ['CREATE INDEX agent_i ON users ((length(email)))', 'length'],
    ["CREATE INDEX agent_i ON users ((to_tsvector('simple', name)))", 'to_tsvector'],
    ["CREATE INDEX agent_i ON users (id) WHERE email LIKE '%@x%'", 'LIKE'],
    ['CREATE INDEX agent_i ON orders ((agent_meta ->> status))', 'literal key'],
    ["CREATE INDEX agent_i ON users (id) WHERE name = ANY ('{a,b}')", 'ANY'],
    ['CREATE INDEX agent_i ON users ((ARRAY[id, id]))', 'ARRAY'],
    ['CREATE INDEX agent_i ON users ((ROW(id, email)))', 'row constructor'],
    ['CREATE INDEX agent_i ON users ((users.email))', 'users.email'],
    ['CREATE INDEX agent_i ON users ((md5(email)))', 'md5'],
  ])('refuses %s', async (sql, says) => {
    const report = await checkMigration(sql);
    expect(refusedRules(report)).toEqual(['core-index-expression']);
    expect(report.statements[0].message).toContain(says);
  });

  test("an agent table's indexes may use any allowed function", async () => {
    expect(await rules('CREATE TABLE agent_t (a int, b text); CREATE INDEX agent_t_i ON agent_t ((a / 2), (b::int), md5(b)) WHERE length(b) > 2')).toEqual([]);
  });
});

describe('CHECKs on agent columns of core tables', () => {
  test('accepts comparisons, BETWEEN and IS NULL on the added columns with literal defaults', async () => {
    expect(
      await rules(
        'ALTER TABLE orders ADD COLUMN agent_p smallint NOT NULL DEFAULT 3 CHECK (agent_p BETWEEN 1 AND 5), ADD agent_q text CHECK (agent_q IS NULL OR char_length(agent_q) < 100)',
      ),
    ).toEqual([]);
  });

  test.each([
    ["ALTER TABLE orders ADD COLUMN agent_t timestamptz DEFAULT now() CHECK (agent_t < '2030-01-01')", 'time value'],
    ["ALTER TABLE orders ADD agent_t date DEFAULT CURRENT_DATE, ADD agent_u int CHECK (agent_u > 0 OR agent_t < '2030-01-01')", 'agent_t'],
    ['ALTER TABLE orders ADD COLUMN agent_q int DEFAULT 1 CHECK (10 / agent_q > 0)', '/'],
    ["ALTER TABLE orders ADD COLUMN agent_q text DEFAULT 'x' CHECK (agent_q::int > 0)", 'cast'],
    ["ALTER TABLE orders ADD COLUMN agent_q text CHECK (agent_q ~ '^(a|aa)+$')", '~'],
  ])('refuses %s', async (sql, says) => {
    const report = await checkMigration(sql);
    expect(refusedRules(report)).toEqual(['core-check']);
    expect(report.statements[0].message).toContain(says);
  });
});

describe('caps on agent columns and indexes per core table, counted with what the table has', () => {
  const columns = (n: number, table = 'users', from = 0): string =>
    `ALTER TABLE ${table} ${Array.from({ length: n }, (_, i) => `ADD COLUMN agent_c${from + i} int`).join(', ')}`;
  const indexes = (n: number, table = 'users'): string => Array.from({ length: n }, (_, i) => `CREATE INDEX agent_${table}_i${i} ON ${table} (id)`).join(';\n');

  test(`${MAX_AGENT_COLUMNS_PER_CORE_TABLE} columns and ${MAX_AGENT_INDEXES_PER_CORE_TABLE} indexes pass; one more of each is refused`, async () => {
    expect(await rules(columns(MAX_AGENT_COLUMNS_PER_CORE_TABLE))).toEqual([]);
    expect(await rules(columns(MAX_AGENT_COLUMNS_PER_CORE_TABLE + 1))).toEqual(['core-column-cap']);
    expect(await rules(indexes(MAX_AGENT_INDEXES_PER_CORE_TABLE))).toEqual([]);
    expect(await rules(indexes(MAX_AGENT_INDEXES_PER_CORE_TABLE + 1))).toEqual(['core-index-cap']);
  });

  test('tables are counted apart, agent tables not at all', async () => {
    const sql = [columns(20, 'users'), columns(20, 'orders'), columns(40, 'agent_t'), indexes(8, 'users'), indexes(8, 'orders'), indexes(12, 'agent_t')].join(
      ';\n',
    );
    expect(await rules(sql)).toEqual([]);
  });

  test('counts what the database says each table has already', async () => {
    const coreTables = { users: { agentColumns: 30, agentIndexes: 7 }, orders: { agentColumns: 0, agentIndexes: 0 } };
    expect(await rules(columns(2), { coreTables })).toEqual([]);
    const over = await checkMigration(columns(3), { coreTables });
    expect(refusedRules(over)).toEqual(['core-column-cap']);
    expect(over.statements[0].message).toContain('33 agent columns');
    expect(await rules(indexes(1), { coreTables })).toEqual([]);
    expect(await rules(indexes(2), { coreTables })).toEqual(['core-index-cap']);
    expect(await rules(columns(32, 'orders'), { coreTables })).toEqual([]);
  });

  test('the refusal lands on the statement that crosses the cap', async () => {
    const report = await checkMigration(`${columns(30)};\n${columns(2, 'users', 30)};\n${columns(1, 'users', 32)}`);
    expect(report.statements.map((s) => s.accepted)).toEqual([true, true, false]);
  });
});

describe('renames are judged by the name rules of a CREATE', () => {
  test.each([
    'ALTER TABLE agent_x RENAME TO agent_migrations',
    'ALTER INDEX agent_x RENAME TO agent_migrations_pkey',
    'ALTER VIEW agent_x RENAME TO agent_migrations',
    'ALTER SEQUENCE agent_x RENAME TO agent_migrations',
    'ALTER TYPE agent_x RENAME TO agent_migrations',
    'ALTER TABLE agent_x RENAME CONSTRAINT agent_c TO agent_migrations_pkey',
    'ALTER TABLE agent_x RENAME TO events',
  ])('%s is refused as a Forge name', async (sql) => {
    expect(await rules(sql)).toEqual(['forge-table']);
  });

  test('a column may take any name, an object any other agent_ name', async () => {
    expect(await rules('ALTER TABLE agent_x RENAME COLUMN a TO agent_migrations; ALTER TABLE agent_x RENAME TO agent_y')).toEqual([]);
  });
});

describe('row types count as references', () => {
  test.each([
    'CREATE TABLE agent_t (e events)',
    'CREATE TABLE agent_t (e public.forge_migrations[])',
    'CREATE TABLE agent_t (e agent_migrations)',
    'ALTER TABLE users ADD COLUMN agent_e active_tools[]',
    'CREATE VIEW agent_v AS SELECT CAST(NULL AS tool_versions) AS v',
    'CREATE TYPE agent_ty AS (v tool_quarantine)',
  ])('%s names a Forge table', async (sql) => {
    expect(await rules(sql)).toEqual(['forge-table']);
  });

  test("a column named like a Forge table, and the application's own types, stay allowed", async () => {
    expect(await rules('CREATE TABLE agent_t (events int, status order_status, o agent_other)')).toEqual([]);
  });
});

describe('false rejections of round two, fixed', () => {
  test('COMMENT ON COLUMN of an agent column of a core table (added now or earlier)', async () => {
    expect(await rules("ALTER TABLE users ADD agent_tier text; COMMENT ON COLUMN users.agent_tier IS 'tier'")).toEqual([]);
    expect(await rules("COMMENT ON COLUMN public.users.agent_tier IS 'tier'")).toEqual([]);
    expect(await rules("COMMENT ON COLUMN users.email IS 'x'")).toEqual(['agent-namespace']);
    expect(await rules("COMMENT ON COLUMN events.agent_x IS 'x'")).toEqual(['forge-table']);
  });

  test('PARTITION OF and INHERITS an agent table; never a core one', async () => {
    expect(await rules("CREATE TABLE agent_part1 PARTITION OF agent_parent FOR VALUES FROM ('2026-01-01') TO ('2027-01-01')")).toEqual([]);
    expect(await rules('CREATE TABLE agent_child () INHERITS (agent_parent)')).toEqual([]);
    expect(await rules('CREATE TABLE agent_part1 PARTITION OF orders DEFAULT')).toEqual(['create-table-option-forbidden']);
    expect(await rules('CREATE TABLE agent_child () INHERITS (agent_parent, users)')).toEqual(['create-table-option-forbidden']);
  });
});

describe('text that is not UTF-8 is refused before parsing, naming the byte offset', () => {
  test('bytes: the first bad byte, its line and column', () => {
    const bytes = Buffer.concat([Buffer.from("CREATE TABLE agent_t (a text);\nCOMMENT ON TABLE agent_t IS 'caf"), Buffer.from([0xe9]), Buffer.from("'")]);
    const decoded = decodeMigration(bytes);
    expect(decoded).toMatchObject({ problem: { rule: 'invalid-utf8', location: { line: 2, column: 33 } } });
    expect('problem' in decoded && decoded.problem.message).toContain('byte 0xe9 at byte 63');
  });

  test.each([
    ['an overlong encoding', [0xc0, 0xaf], 0],
    ['an encoded surrogate', [0xed, 0xa0, 0x80], 0],
    ['a sequence cut short at the end', [0x41, 0xe2, 0x82], 1],
    ['a code point above U+10FFFF', [0xf4, 0x90, 0x80, 0x80], 0],
    ['a stray continuation byte', [0x41, 0x42, 0x80], 2],
  ])('%s', async (_what, raw, offset) => {
    const report = await checkMigration(Uint8Array.from(raw));
    expect(report).toMatchObject({ accepted: false, statements: [], problem: { rule: 'invalid-utf8' } });
    expect(report.problem?.message).toContain(`at byte ${offset} `);
  });

  test('valid UTF-8 bytes are judged like the string', async () => {
    const sql = "CREATE TABLE agent_t (a text DEFAULT '€ 𝄞 ü')";
    expect(await checkMigration(Buffer.from(sql))).toEqual(await checkMigration(sql));
    expect((await checkMigration(Buffer.from(sql))).accepted).toBe(true);
  });

  test('a string with a lone surrogate (from JSON, the SDK or MCP) is refused the same way', async () => {
    const report = await checkMigration("CREATE TABLE agent_€ (a text DEFAULT '\uDC00')");
    expect(report.problem).toMatchObject({ rule: 'invalid-utf8', location: { line: 1, column: 39 } });
    expect(report.problem?.message).toContain('at byte 40 ');
  });
});
