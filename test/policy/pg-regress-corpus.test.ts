import * as fs from 'fs';
import * as path from 'path';
import { checkMigration, loadPolicyParser, MAX_MIGRATION_STATEMENTS } from '../../src/policy';
import type { PolicyReport } from '../../src/policy';
import { judgeEveryStatement } from '../../src/policy/check-migration';
import { stripPsql } from './psql-script';

/** PostgreSQL's own regression SQL, vendored with its origin and licence (test/fixtures/pg-regress/README.md). */
const corpusDir = path.join(__dirname, '..', 'fixtures', 'pg-regress');

/** The twelve files of test/fixtures/pg-regress/README.md. */
const FILES = [
  'drop_if_exists.sql',
  'truncate.sql',
  'create_table.sql',
  'create_index.sql',
  'alter_table.sql',
  'foreign_key.sql',
  'create_view.sql',
  'create_function_sql.sql',
  'triggers.sql',
  'privileges.sql',
  'transactions.sql',
  'copy.sql',
];

/** Statement kinds the README says must always be rejected (no agent_ DROP INDEX occurs in these files). */
const ALWAYS_REJECTED = new Set([
  'DropStmt',
  'TruncateStmt',
  'InsertStmt',
  'UpdateStmt',
  'DeleteStmt',
  'MergeStmt',
  'GrantStmt',
  'GrantRoleStmt',
  'TransactionStmt',
  'CreateFunctionStmt',
  'CreateTrigStmt',
  'RuleStmt',
  'DoStmt',
]);

/**
 * Statements and parse failures per file with libpg-query 18.1.5 (PostgreSQL 18 grammar). Parse failures are the
 * psql variables (`:'filename'`), removed syntax (WITH OIDS) and the files' deliberate errors. A change here means the
 * splitting or the parser changed: look before updating.
 */
const EXPECTED: Record<string, { statements: number; parseErrors: number }> = {
  'drop_if_exists.sql': { statements: 106, parseErrors: 0 },
  'truncate.sql': { statements: 87, parseErrors: 0 },
  'create_table.sql': { statements: 296, parseErrors: 7 },
  'create_index.sql': { statements: 98, parseErrors: 0 },
  'alter_table.sql': { statements: 1518, parseErrors: 2 },
  'foreign_key.sql': { statements: 1370, parseErrors: 4 },
  'create_view.sql': { statements: 268, parseErrors: 0 },
  'create_function_sql.sql': { statements: 157, parseErrors: 0 },
  'triggers.sql': { statements: 1075, parseErrors: 8 },
  'privileges.sql': { statements: 1113, parseErrors: 0 },
  'transactions.sql': { statements: 470, parseErrors: 0 },
  'copy.sql': { statements: 88, parseErrors: 10 },
};

const reports = new Map<string, PolicyReport>();
/** What checkMigration itself says of each whole file (the files over the statement limit are refused whole). */
const wholeFiles = new Map<string, PolicyReport>();

beforeAll(async () => {
  await loadPolicyParser();
  for (const file of FILES) {
    const script = stripPsql(fs.readFileSync(path.join(corpusDir, file), 'utf8'));
    // The judge parses the whole text, and when it fails (these files never parse whole) splits it with the lexer
    // the way psql does and parses each statement alone. Every statement is judged, past the statement limit too.
    reports.set(file, judgeEveryStatement(script));
    wholeFiles.set(file, await checkMigration(script));
  }
});

describe.each(FILES)('pg-regress %s', (file) => {
  const report = (): PolicyReport => reports.get(file) as PolicyReport;

  it('is refused as a whole, past the statement limit by that limit alone', () => {
    const whole = wholeFiles.get(file) as PolicyReport;
    expect(whole.accepted).toBe(false);
    if (EXPECTED[file].statements > MAX_MIGRATION_STATEMENTS) {
      expect(whole).toMatchObject({ statements: [], problem: { rule: 'too-many-statements' } });
      expect(whole.problem?.message).toContain(String(EXPECTED[file].statements));
    } else {
      expect(whole.statements).toEqual(report().statements);
    }
  });

  it('gives every statement a verdict with a rule and a message, and rejects the file', () => {
    const { statements } = report();
    expect(statements.length).toBeGreaterThan(0);
    statements.forEach((s, i) => {
      expect(s.index).toBe(i);
      expect(typeof s.accepted).toBe('boolean');
      expect(s.rule).toEqual(expect.any(String));
      expect(s.message).toEqual(expect.any(String));
      expect(s.text.trim()).not.toBe('');
    });
    expect(report().accepted).toBe(false);
  });

  it('splits into the expected statements, rejecting every one that does not parse', () => {
    const { statements } = report();
    const failures = statements.filter((s) => s.kind === 'ParseError');
    expect({ statements: statements.length, parseErrors: failures.length }).toEqual(EXPECTED[file]);
    for (const s of failures) expect(s).toMatchObject({ accepted: false, rule: 'parse-error' });
  });

  it('rejects every DROP, TRUNCATE, DML, GRANT, transaction control, function, trigger, rule and DO', () => {
    const wrong = report().statements.filter((s) => ALWAYS_REJECTED.has(s.kind) && s.accepted);
    expect(wrong).toEqual([]);
  });

  it('accepts nothing: none of these statements stays inside the agent_ namespace', () => {
    expect(report().statements.filter((s) => s.accepted)).toEqual([]);
  });
});

it('sees the whole corpus', () => {
  const all = [...reports.values()].flatMap((r) => r.statements);
  expect(all).toHaveLength(6646);
  expect(all.filter((s) => s.kind === 'ParseError')).toHaveLength(31);
  expect(all.filter((s) => s.accepted)).toHaveLength(0);
});

describe('stripPsql (README step 1)', () => {
  it('drops meta-commands, ends the query before \\gexec, splits \\; and removes COPY data blocks only', async () => {
    const script = [
      '\\set ECHO none',
      "SELECT 'CREATE TABLE x (a int);'",
      '\\gexec',
      'SELECT 1\\; SELECT 2;',
      'COPY t FROM stdin;',
      '1\tone',
      '\\.',
      'COPY t FROM stdin; -- fail',
      'DROP TABLE t;',
      '\\.',
    ].join('\n');
    const report = await checkMigration(stripPsql(script));
    expect(report.statements.map((s) => [s.kind, s.location?.line])).toEqual([
      ['SelectStmt', 2],
      ['SelectStmt', 4],
      ['SelectStmt', 4],
      ['CopyStmt', 5],
      ['CopyStmt', 8],
      ['DropStmt', 9],
    ]);
  });
});
