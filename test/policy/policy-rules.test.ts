import { checkMigration, checkMigrationSync, loadPolicyParser } from '../../src/policy';

interface Case {
  sql: string;
  rule: string;
  /** Expected kind of the (single) statement, when worth asserting. */
  kind?: string;
  /** Words the message must contain, so that an agent knows what to do. */
  says?: string[];
  schema?: string;
}

/** Statements SCHEMA_POLICY.md accepts, each alone in a migration. */
const accepted: Case[] = [
  { sql: 'CREATE TABLE agent_notes (id bigint PRIMARY KEY, body text NOT NULL)', rule: 'create-agent-table', kind: 'CreateStmt' },
  { sql: 'CREATE TABLE IF NOT EXISTS agent_notes (id int)', rule: 'create-agent-table' },
  { sql: 'CREATE TABLE AGENT_Notes (id int)', rule: 'create-agent-table' },
  { sql: 'CREATE TABLE "agent_notes" (id int)', rule: 'create-agent-table' },
  { sql: 'CREATE TABLE public.agent_notes (id int)', rule: 'create-agent-table' },
  { sql: 'CREATE TABLE app.agent_notes (id int)', rule: 'create-agent-table', schema: 'app' },
  {
    sql: 'CREATE TABLE agent_orders_meta (order_id int REFERENCES orders (id), CONSTRAINT agent_om_chk CHECK (order_id > 0), LIKE agent_base INCLUDING DEFAULTS)',
    rule: 'create-agent-table',
  },
  { sql: 'CREATE TABLE agent_t (id serial, u int UNIQUE, CONSTRAINT agent_t_u2 UNIQUE (u))', rule: 'create-agent-table' },
  { sql: 'CREATE INDEX agent_users_email_idx ON users (lower(email))', rule: 'create-agent-index', kind: 'IndexStmt' },
  { sql: 'CREATE UNIQUE INDEX IF NOT EXISTS agent_u ON public.agent_notes (body) WHERE deleted_at IS NULL', rule: 'create-agent-index' },
  { sql: 'CREATE INDEX IF NOT EXISTS agent_u ON public.users (email) WHERE deleted_at IS NULL', rule: 'create-agent-index' },
  { sql: 'CREATE INDEX agent_n ON agent_notes (id)', rule: 'create-agent-index' },
  { sql: 'ALTER TABLE users ADD COLUMN agent_score int', rule: 'core-add-column', kind: 'AlterTableStmt' },
  {
    sql: "ALTER TABLE users ADD COLUMN agent_flag boolean NOT NULL DEFAULT false CHECK (agent_flag IS NOT NULL), ADD agent_flag_id int REFERENCES flags (id) ON DELETE SET NULL, ADD agent_note text DEFAULT 'x'",
    rule: 'core-add-column',
  },
  { sql: 'ALTER TABLE IF EXISTS ONLY users ADD COLUMN IF NOT EXISTS agent_x int CONSTRAINT agent_x_chk CHECK (agent_x > 0)', rule: 'core-add-column' },
  { sql: 'ALTER TABLE agent_notes ADD COLUMN title text NOT NULL', rule: 'alter-agent-table' },
  {
    sql: 'ALTER TABLE agent_notes ALTER COLUMN body TYPE varchar(200), ALTER body SET DEFAULT $$x$$, ALTER body DROP DEFAULT, ALTER body SET NOT NULL, ALTER body DROP NOT NULL',
    rule: 'alter-agent-table',
  },
  {
    sql: 'ALTER TABLE agent_notes ADD CONSTRAINT agent_notes_fk FOREIGN KEY (uid) REFERENCES users (id), DROP CONSTRAINT agent_old',
    rule: 'alter-agent-table',
  },
  { sql: 'ALTER TABLE agent_notes ADD UNIQUE (body)', rule: 'alter-agent-table' },
  { sql: 'ALTER TABLE agent_notes RENAME COLUMN body TO content', rule: 'rename-agent-column', kind: 'RenameStmt' },
  { sql: 'ALTER TABLE agent_notes RENAME TO agent_memos', rule: 'rename-agent-object' },
  { sql: 'ALTER INDEX agent_n RENAME TO agent_n2', rule: 'rename-agent-object' },
  { sql: 'ALTER TABLE agent_notes RENAME CONSTRAINT agent_a TO agent_b', rule: 'rename-agent-constraint' },
  { sql: 'DROP INDEX agent_n', rule: 'drop-agent-index', kind: 'DropStmt' },
  { sql: 'DROP INDEX IF EXISTS public.agent_n, agent_m', rule: 'drop-agent-index' },
  { sql: 'CREATE VIEW agent_active AS SELECT id FROM users WHERE active', rule: 'create-agent-view', kind: 'ViewStmt' },
  { sql: 'CREATE OR REPLACE VIEW agent_active AS SELECT id, email FROM public.users', rule: 'replace-agent-view' },
  { sql: 'ALTER VIEW agent_active ALTER COLUMN id SET DEFAULT 0', rule: 'alter-agent-view' },
  { sql: 'CREATE SEQUENCE agent_seq START 10', rule: 'create-agent-sequence', kind: 'CreateSeqStmt' },
  { sql: "CREATE TYPE agent_mood AS ENUM ('ok', 'sad')", rule: 'create-agent-type', kind: 'CreateEnumStmt' },
  { sql: 'CREATE TYPE public.agent_pair AS (a int, b text)', rule: 'create-agent-type', kind: 'CompositeTypeStmt' },
  { sql: 'CREATE TYPE agent_span AS RANGE (subtype = int4)', rule: 'create-agent-type', kind: 'CreateRangeStmt' },
  { sql: "COMMENT ON TABLE agent_notes IS 'drop table users; -- not SQL'", rule: 'comment-agent-object', kind: 'CommentStmt' },
  { sql: 'COMMENT ON COLUMN public.agent_notes.body IS NULL', rule: 'comment-agent-object' },
  { sql: "COMMENT ON INDEX agent_n IS 'x'", rule: 'comment-agent-object' },
  { sql: "COMMENT ON CONSTRAINT agent_c ON users IS 'x'", rule: 'comment-agent-object' },
  { sql: "COMMENT ON TYPE agent_mood IS 'x'", rule: 'comment-agent-object' },
  // Things that look dangerous to a regular expression but are not statements at all.
  { sql: "CREATE TABLE agent_t (note text DEFAULT 'DROP TABLE users;')", rule: 'create-agent-table' },
  { sql: 'CREATE TABLE agent_t (note text DEFAULT $tag$ ; DROP TABLE users; $$ $tag$)', rule: 'create-agent-table' },
  { sql: "CREATE TABLE agent_t (note text DEFAULT E'it\\'s; DROP TABLE users')", rule: 'create-agent-table' },
  { sql: 'CREATE TABLE agent_t ("DROP TABLE users; --" int)', rule: 'create-agent-table' },
  { sql: 'CREATE /* DROP TABLE users; /* nested */ still comment; */ TABLE agent_t (id int)', rule: 'create-agent-table' },
  { sql: 'CREATE -- DROP TABLE users;\n TABLE agent_t (id int)', rule: 'create-agent-table' },
  { sql: 'CREATE\tTABLE\n\n  agent_t\r\n(id int);;', rule: 'create-agent-table' },
];

/** Statements SCHEMA_POLICY.md rejects, each alone in a migration. */
const rejected: Case[] = [
  {
    sql: 'ALTER TABLE users ADD COLUMN agent_flag int NOT NULL DEFAULT 1 REFERENCES flags (id)',
    rule: 'core-fk-default',
    says: ['DEFAULT', 'flags'],
  },
  // Names and schemas.
  { sql: 'CREATE TABLE notes (id int)', rule: 'agent-namespace', says: ['agent_notes'] },
  { sql: 'CREATE TABLE "AGENT_notes" (id int)', rule: 'agent-namespace', says: ['agent_'] },
  { sql: 'CREATE TABLE agentnotes (id int)', rule: 'agent-namespace' },
  { sql: 'CREATE TABLE other.agent_notes (id int)', rule: 'foreign-schema', says: ['public'] },
  { sql: 'CREATE TABLE public.agent_notes (id int)', rule: 'foreign-schema', schema: 'app' },
  { sql: 'CREATE TABLE db.public.agent_notes (id int)', rule: 'foreign-schema' },
  { sql: 'CREATE TABLE agent_t (id int REFERENCES other.users (id))', rule: 'foreign-schema' },
  { sql: 'CREATE TABLE agent_t (id other.money)', rule: 'foreign-schema' },
  { sql: 'CREATE VIEW agent_v AS SELECT * FROM secret.users', rule: 'foreign-schema' },
  { sql: 'CREATE TABLE agent_t (id int CONSTRAINT t_pk PRIMARY KEY)', rule: 'agent-namespace', says: ['agent_t_pk'] },
  { sql: 'CREATE TABLE agent_t (id int, CONSTRAINT uniq UNIQUE (id))', rule: 'agent-namespace' },
  { sql: 'CREATE TEMP TABLE agent_t (id int)', rule: 'temporary-object' },
  { sql: 'CREATE TABLE agent_t () INHERITS (users)', rule: 'create-table-option-forbidden' },
  { sql: 'CREATE TABLE agent_t PARTITION OF users FOR VALUES IN (1)', rule: 'create-table-option-forbidden' },
  { sql: 'CREATE INDEX ON users (email)', rule: 'index-unnamed', says: ['agent_'] },
  { sql: 'CREATE INDEX users_email_idx ON users (email)', rule: 'agent-namespace', says: ['agent_users_email_idx'] },
  { sql: 'CREATE INDEX CONCURRENTLY agent_i ON users (email)', rule: 'non-transactional', says: ['CONCURRENTLY'] },
  { sql: 'CREATE VIEW v AS SELECT 1', rule: 'agent-namespace' },
  { sql: 'CREATE SEQUENCE s', rule: 'agent-namespace' },
  { sql: "CREATE TYPE mood AS ENUM ('a')", rule: 'agent-namespace' },
  { sql: 'CREATE TYPE other.agent_mood AS (a int)', rule: 'foreign-schema' },
  { sql: `CREATE TABLE agent_${'x'.repeat(60)} (id int)`, rule: 'identifier-too-long', says: ['63', 'truncat'] },
  { sql: `CREATE TABLE agent_t (${'é'.repeat(32)} int)`, rule: 'identifier-too-long' },
  // Core tables: only ADD COLUMN agent_... and CREATE INDEX agent_...
  { sql: 'ALTER TABLE users ALTER COLUMN email TYPE text', rule: 'core-table-alter', says: ['ADD COLUMN', 'CREATE INDEX agent_', 'agent_ table'] },
  { sql: 'ALTER TABLE users ADD CONSTRAINT agent_c CHECK (id > 0)', rule: 'core-table-alter' },
  { sql: 'ALTER TABLE users DROP CONSTRAINT users_pkey', rule: 'core-table-alter' },
  { sql: 'ALTER TABLE users ENABLE ROW LEVEL SECURITY', rule: 'core-table-alter' },
  { sql: 'ALTER TABLE users SET TABLESPACE fast', rule: 'core-table-alter' },
  { sql: 'ALTER TABLE users ALTER COLUMN email SET STORAGE EXTERNAL', rule: 'core-table-alter' },
  { sql: 'ALTER TABLE users DISABLE TRIGGER ALL', rule: 'core-table-alter' },
  { sql: 'ALTER TABLE users ADD COLUMN agent_x int, ALTER COLUMN email DROP NOT NULL', rule: 'core-table-alter', says: ['Action 2'] },
  { sql: 'ALTER TABLE users ADD COLUMN agent_x int, DROP COLUMN email', rule: 'drop-forbidden' },
  { sql: 'ALTER TABLE users ADD COLUMN score int', rule: 'agent-namespace', says: ['agent_score'] },
  { sql: 'ALTER TABLE users ADD COLUMN agent_x int NOT NULL', rule: 'not-null-without-default', says: ['DEFAULT'] },
  { sql: 'ALTER TABLE users ADD COLUMN agent_x int UNIQUE', rule: 'core-column-constraint', says: ['CREATE UNIQUE INDEX agent_'] },
  { sql: 'ALTER TABLE users ADD COLUMN agent_x int PRIMARY KEY', rule: 'core-column-constraint' },
  { sql: 'ALTER TABLE users ADD COLUMN agent_x int GENERATED ALWAYS AS IDENTITY', rule: 'core-column-constraint' },
  { sql: 'ALTER TABLE users ADD COLUMN agent_x bigserial', rule: 'core-column-implicit-object' },
  { sql: 'ALTER TABLE users ADD COLUMN agent_x int CONSTRAINT x_chk CHECK (agent_x > 0)', rule: 'agent-namespace' },
  { sql: 'ALTER TABLE users RENAME TO people', rule: 'core-table-alter' },
  { sql: 'ALTER TABLE users RENAME COLUMN email TO mail', rule: 'core-table-alter' },
  { sql: 'ALTER TABLE users OWNER TO mallory', rule: 'privileges-forbidden' },
  { sql: 'ALTER TABLE users SET SCHEMA archive', rule: 'set-schema-forbidden' },
  { sql: 'ALTER TABLE agent_t SET SCHEMA archive', rule: 'set-schema-forbidden' },
  // Agent tables: the listed actions only; renames stay inside the namespace.
  { sql: 'ALTER TABLE agent_t DROP COLUMN body', rule: 'drop-forbidden' },
  { sql: 'ALTER TABLE agent_t ENABLE ROW LEVEL SECURITY', rule: 'alter-action-forbidden' },
  { sql: 'ALTER TABLE agent_t DROP CONSTRAINT users_fk', rule: 'drop-forbidden' },
  { sql: 'ALTER TABLE agent_t DROP CONSTRAINT agent_fk CASCADE', rule: 'cascade-forbidden' },
  { sql: 'ALTER TABLE agent_t ADD CONSTRAINT fk FOREIGN KEY (a) REFERENCES users (id)', rule: 'agent-namespace' },
  { sql: 'ALTER TABLE agent_t RENAME TO notes', rule: 'rename-leaves-namespace', says: ['agent_notes'] },
  { sql: 'ALTER TABLE agent_t RENAME TO "AGENT_t"', rule: 'rename-leaves-namespace' },
  { sql: 'ALTER INDEX users_pkey RENAME TO agent_pkey', rule: 'agent-namespace' },
  { sql: 'ALTER VIEW v RENAME TO agent_v', rule: 'agent-namespace' },
  { sql: 'ALTER VIEW agent_v OWNER TO bob', rule: 'privileges-forbidden' },
  { sql: 'ALTER SEQUENCE agent_s RESTART', rule: 'default-deny' },
  { sql: 'COMMENT ON TABLE users IS $$mine$$', rule: 'agent-namespace' },
  { sql: "COMMENT ON COLUMN users.x IS 'x'", rule: 'agent-namespace' },
  { sql: "COMMENT ON FUNCTION f() IS 'x'", rule: 'default-deny' },
  // Rejected, always.
  { sql: 'DROP TABLE agent_t', rule: 'drop-forbidden', kind: 'DropStmt', says: ['DROP INDEX agent_'] },
  { sql: 'DROP TABLE IF EXISTS users CASCADE', rule: 'drop-forbidden' },
  { sql: 'DROP VIEW agent_v', rule: 'drop-forbidden' },
  { sql: 'DROP SEQUENCE agent_s', rule: 'drop-forbidden' },
  { sql: 'DROP TYPE agent_mood', rule: 'drop-forbidden' },
  { sql: 'DROP SCHEMA public', rule: 'drop-forbidden' },
  { sql: 'DROP DATABASE app', rule: 'drop-forbidden', kind: 'DropdbStmt' },
  { sql: 'DROP ROLE bob', rule: 'drop-forbidden', kind: 'DropRoleStmt' },
  { sql: 'DROP EXTENSION pgcrypto', rule: 'drop-forbidden' },
  { sql: 'DROP INDEX users_pkey', rule: 'drop-forbidden' },
  { sql: 'DROP INDEX CONCURRENTLY agent_n', rule: 'non-transactional' },
  { sql: 'DROP INDEX agent_n CASCADE', rule: 'cascade-forbidden' },
  { sql: 'TRUNCATE users', rule: 'truncate-forbidden', kind: 'TruncateStmt' },
  { sql: 'INSERT INTO agent_t VALUES (1)', rule: 'dml-forbidden', kind: 'InsertStmt' },
  { sql: 'UPDATE users SET email = NULL', rule: 'dml-forbidden', kind: 'UpdateStmt' },
  { sql: 'DELETE FROM users', rule: 'dml-forbidden', kind: 'DeleteStmt' },
  { sql: 'MERGE INTO agent_t t USING users u ON t.id = u.id WHEN MATCHED THEN DELETE', rule: 'dml-forbidden', kind: 'MergeStmt' },
  { sql: 'SELECT * FROM users', rule: 'dml-forbidden', kind: 'SelectStmt' },
  { sql: 'WITH x AS (DELETE FROM users RETURNING *) SELECT 1', rule: 'dml-forbidden' },
  { sql: 'VALUES (1)', rule: 'dml-forbidden' },
  { sql: 'EXPLAIN ANALYZE DELETE FROM users', rule: 'dml-forbidden' },
  { sql: "COPY users TO '/tmp/x'", rule: 'copy-forbidden', kind: 'CopyStmt' },
  { sql: 'COPY agent_t FROM STDIN', rule: 'copy-forbidden' },
  { sql: 'CREATE TABLE agent_copy AS SELECT * FROM users', rule: 'create-table-as-forbidden', kind: 'CreateTableAsStmt' },
  { sql: 'SELECT * INTO agent_copy FROM users', rule: 'create-table-as-forbidden', kind: 'SelectStmt' },
  { sql: 'CREATE MATERIALIZED VIEW agent_mv AS SELECT 1', rule: 'create-table-as-forbidden' },
  { sql: 'CREATE FUNCTION agent_f() RETURNS int LANGUAGE sql AS $$ SELECT 1 $$', rule: 'code-forbidden', kind: 'CreateFunctionStmt' },
  { sql: 'CREATE PROCEDURE agent_p() LANGUAGE sql BEGIN ATOMIC SELECT 1; SELECT 2; END', rule: 'code-forbidden' },
  { sql: 'ALTER FUNCTION f() SECURITY DEFINER', rule: 'code-forbidden' },
  { sql: 'CREATE TRIGGER agent_tr AFTER INSERT ON users FOR EACH ROW EXECUTE FUNCTION f()', rule: 'code-forbidden', kind: 'CreateTrigStmt' },
  { sql: 'CREATE EVENT TRIGGER agent_et ON ddl_command_start EXECUTE FUNCTION f()', rule: 'code-forbidden' },
  { sql: 'CREATE RULE agent_r AS ON INSERT TO users DO INSTEAD NOTHING', rule: 'code-forbidden', kind: 'RuleStmt' },
  { sql: 'CREATE EXTENSION pgcrypto', rule: 'code-forbidden' },
  { sql: 'CREATE LANGUAGE plperl', rule: 'code-forbidden' },
  { sql: 'CREATE CAST (int AS text) WITH INOUT', rule: 'code-forbidden' },
  { sql: 'CREATE OPERATOR === (leftarg = int, rightarg = int, function = int4eq)', rule: 'code-forbidden' },
  { sql: "DO $$ BEGIN EXECUTE 'DROP TABLE users'; END $$", rule: 'code-forbidden', kind: 'DoStmt' },
  { sql: 'CALL agent_p()', rule: 'code-forbidden', kind: 'CallStmt' },
  { sql: 'GRANT SELECT ON users TO public', rule: 'privileges-forbidden', kind: 'GrantStmt' },
  { sql: 'REVOKE ALL ON agent_t FROM bob', rule: 'privileges-forbidden' },
  { sql: 'GRANT admin TO bob', rule: 'privileges-forbidden', kind: 'GrantRoleStmt' },
  { sql: "CREATE ROLE agent_r LOGIN PASSWORD 'x'", rule: 'privileges-forbidden' },
  { sql: 'CREATE USER agent_u', rule: 'privileges-forbidden' },
  { sql: 'ALTER ROLE bob SUPERUSER', rule: 'privileges-forbidden' },
  { sql: 'SET ROLE postgres', rule: 'privileges-forbidden', kind: 'VariableSetStmt' },
  { sql: 'SET SESSION AUTHORIZATION postgres', rule: 'privileges-forbidden' },
  { sql: 'RESET ROLE', rule: 'privileges-forbidden' },
  { sql: 'RESET ALL', rule: 'session-forbidden' },
  { sql: "SET search_path = 'evil'", rule: 'session-forbidden' },
  { sql: 'SET LOCAL lock_timeout = 0', rule: 'session-forbidden', says: ['lock_timeout'] },
  { sql: "ALTER SYSTEM SET fsync = 'off'", rule: 'session-forbidden', kind: 'AlterSystemStmt' },
  { sql: 'ALTER DATABASE app SET search_path = x', rule: 'session-forbidden' },
  { sql: 'BEGIN', rule: 'transaction-control-forbidden', kind: 'TransactionStmt' },
  { sql: 'START TRANSACTION ISOLATION LEVEL SERIALIZABLE', rule: 'transaction-control-forbidden' },
  { sql: 'COMMIT', rule: 'transaction-control-forbidden' },
  { sql: 'ROLLBACK', rule: 'transaction-control-forbidden' },
  { sql: 'SAVEPOINT s', rule: 'transaction-control-forbidden' },
  { sql: 'RELEASE SAVEPOINT s', rule: 'transaction-control-forbidden' },
  { sql: "PREPARE TRANSACTION 'x'", rule: 'transaction-control-forbidden' },
  { sql: 'LOCK TABLE users IN ACCESS EXCLUSIVE MODE', rule: 'transaction-control-forbidden', kind: 'LockStmt' },
  { sql: 'REINDEX TABLE users', rule: 'non-transactional', kind: 'ReindexStmt' },
  { sql: 'VACUUM FULL users', rule: 'non-transactional', kind: 'VacuumStmt' },
  { sql: 'CLUSTER users USING users_pkey', rule: 'non-transactional', kind: 'ClusterStmt' },
  { sql: 'CREATE DATABASE agent_db', rule: 'non-transactional', kind: 'CreatedbStmt' },
  // Default deny and parse errors.
  { sql: 'CREATE SCHEMA agent_s', rule: 'default-deny', kind: 'CreateSchemaStmt' },
  { sql: 'CREATE DOMAIN agent_d AS int', rule: 'default-deny' },
  { sql: 'CREATE STATISTICS agent_st ON a, b FROM users', rule: 'default-deny' },
  { sql: 'ANALYZE users', rule: 'default-deny' },
  { sql: 'CREATE TABEL agent_t (id int)', rule: 'parse-error', kind: 'ParseError', says: ['syntax error'] },
  { sql: "CREATE TABLE agent_t (note text DEFAULT 'unterminated)", rule: 'parse-error' },
];

beforeAll(async () => {
  await loadPolicyParser();
});

describe('accepted statements (SCHEMA_POLICY.md "Accepted")', () => {
  test.each(accepted)('$sql', async ({ sql, rule, kind, schema }) => {
    const report = await checkMigration(sql, { schema });
    expect(report.statements).toHaveLength(1);
    const [s] = report.statements;
    expect({ accepted: s.accepted, rule: s.rule, message: s.message }).toMatchObject({ accepted: true, rule });
    if (kind) expect(s.kind).toBe(kind);
    expect(report.accepted).toBe(true);
  });
});

describe('rejected statements (SCHEMA_POLICY.md "Rejected, always" and default deny)', () => {
  test.each(rejected)('$sql', async ({ sql, rule, kind, says, schema }) => {
    const report = await checkMigration(sql, { schema });
    expect(report.accepted).toBe(false);
    expect(report.statements).toHaveLength(1);
    const [s] = report.statements;
    expect({ accepted: s.accepted, rule: s.rule }).toEqual({ accepted: false, rule });
    if (kind) expect(s.kind).toBe(kind);
    // An actionable sentence: more than a rule id, ending like a sentence, naming what to do when asked to.
    expect(s.message?.length).toBeGreaterThan(40);
    expect(s.message).toMatch(/[.)]$/);
    for (const word of says ?? []) expect(s.message).toContain(word);
  });
});

describe('migrations of several statements', () => {
  it('gives every statement its own verdict, index, text and location, and rejects the whole for one refusal', async () => {
    const sql = [
      '-- agent migration 0001',
      'CREATE TABLE agent_notes (id int PRIMARY KEY, body text);',
      "/* a comment; with a semicolon */ COMMENT ON TABLE agent_notes IS 'DROP TABLE x; still a string';",
      'CREATE INDEX agent_notes_body ON agent_notes (body);',
      'DROP TABLE users;',
    ].join('\n');
    const report = await checkMigration(sql);
    expect(report.accepted).toBe(false);
    expect(report.statements.map((s) => [s.index, s.kind, s.accepted, s.rule])).toEqual([
      [0, 'CreateStmt', true, 'create-agent-table'],
      [1, 'CommentStmt', true, 'comment-agent-object'],
      [2, 'IndexStmt', true, 'create-agent-index'],
      [3, 'DropStmt', false, 'drop-forbidden'],
    ]);
    expect(report.statements[1].text).toBe("COMMENT ON TABLE agent_notes IS 'DROP TABLE x; still a string'");
    expect(report.statements[3].location).toEqual({ offset: sql.indexOf('DROP TABLE users'), line: 5, column: 1 });
  });

  it('accepts a migration whose every statement is accepted', async () => {
    const report = await checkMigration(
      'CREATE TABLE agent_a (id int); ALTER TABLE users ADD COLUMN agent_a_id int REFERENCES agent_a (id); CREATE INDEX agent_users_a ON users (agent_a_id)',
    );
    expect(report.accepted).toBe(true);
    expect(report.statements.map((s) => s.rule)).toEqual(['create-agent-table', 'core-add-column', 'create-agent-index']);
  });

  it('still judges the other statements when one does not parse', async () => {
    const sql = "CREATE TABLE agent_a (id int);\nCREATE TABEL agent_b (id int);\nDROP TABLE users;\nCOMMENT ON TABLE agent_a IS 'ok';";
    const report = await checkMigration(sql);
    expect(report.accepted).toBe(false);
    expect(report.statements.map((s) => [s.kind, s.rule])).toEqual([
      ['CreateStmt', 'create-agent-table'],
      ['ParseError', 'parse-error'],
      ['DropStmt', 'drop-forbidden'],
      ['CommentStmt', 'comment-agent-object'],
    ]);
    expect(report.statements[1].text).toBe('CREATE TABEL agent_b (id int)');
    expect(report.statements[1].message).toContain('line 2');
  });

  it('splits a failing migration with the lexer: dollar quotes, nested comments, E strings and quoted names keep their semicolons', async () => {
    const sql = [
      "CREATE TABLE agent_a (note text DEFAULT $x$;DROP TABLE users;$x$, e text DEFAULT E'\\';', \"a;b\" int);",
      '/* outer /* inner; */ still; */ selec 1;',
      'CREATE RULE r AS ON INSERT TO users DO ALSO (NOTIFY a; NOTIFY b);',
      'CREATE FUNCTION f() RETURNS int LANGUAGE sql BEGIN ATOMIC SELECT 1; SELECT CASE WHEN true THEN 1 END; END;',
      'ALTER TABLE users ADD COLUMN agent_x int',
    ].join('\n');
    const report = await checkMigration(sql);
    expect(report.statements.map((s) => s.rule)).toEqual(['create-agent-table', 'parse-error', 'code-forbidden', 'code-forbidden', 'core-add-column']);
    expect(report.statements[1].text).toBe('selec 1');
  });

  it('gives an unterminated string the rest of the text, as PostgreSQL would', async () => {
    const report = await checkMigration("CREATE TABLE agent_a (id int); DROP TABLE users; SELECT 'abc; CREATE TABLE agent_b (id int);");
    expect(report.statements.map((s) => s.rule)).toEqual(['create-agent-table', 'drop-forbidden', 'parse-error']);
    expect(report.statements[2].text).toBe("SELECT 'abc; CREATE TABLE agent_b (id int);");
  });

  it('recovers past a grammar error that precedes a lexer error', async () => {
    const report = await checkMigration('selec 1; CREATE TABLE agent_a (id int); select 1 /* never closed');
    expect(report.statements.map((s) => s.rule)).toEqual(['parse-error', 'create-agent-table', 'parse-error']);
  });

  it('reports locations in characters for non-ASCII text', async () => {
    const sql = "COMMENT ON TABLE agent_a IS 'héllo wörld 😀';\nDROP TABLE users";
    const report = await checkMigration(sql);
    expect(report.statements[0].text).toBe("COMMENT ON TABLE agent_a IS 'héllo wörld 😀'");
    expect(report.statements[1].text).toBe('DROP TABLE users');
    expect(report.statements[1].location).toEqual({ offset: sql.indexOf('DROP'), line: 2, column: 1 });
  });

  it('refuses names that PostgreSQL would truncate into another name of the same migration', async () => {
    const base = 'agent_' + 'a'.repeat(57); // 63 bytes: the longest name PostgreSQL keeps whole
    const report = await checkMigration(`CREATE TABLE ${base} (id int); CREATE TABLE ${base}_v2 (id int)`);
    expect(report.statements[0].rule).toBe('create-agent-table');
    expect(report.statements[1]).toMatchObject({ accepted: false, rule: 'identifier-truncation-collision' });
    expect(report.statements[1].message).toContain(base);
  });

  it('refuses an empty migration', async () => {
    expect(await checkMigration('  -- nothing here\n;;')).toEqual({ accepted: false, statements: [] });
    expect(await checkMigration('')).toEqual({ accepted: false, statements: [] });
  });

  it('offers a synchronous variant once the parser is loaded', () => {
    expect(checkMigrationSync('CREATE TABLE agent_a (id int)').accepted).toBe(true);
  });
});

test('the policy judges up to 1 MiB of SQL (the migration workflow takes 512 KiB of it through Temporal)', async () => {
  const big = `CREATE TABLE agent_manual (id int);\nCOMMENT ON TABLE agent_manual IS '${'x'.repeat(1024 * 1024 - 200)}'`;
  expect(await checkMigration(big)).toMatchObject({ accepted: true });
  const over = await checkMigration(`${big}${'y'.repeat(300)}`);
  expect(over).toMatchObject({ accepted: false, statements: [], problem: { rule: 'too-large' } });
});
