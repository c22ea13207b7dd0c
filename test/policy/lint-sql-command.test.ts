import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { Readable } from 'stream';
import { Command } from 'commander';
import { registerLintSql } from '../../src/commands/lint-sql';
import { registerMigrate } from '../../src/commands/migrate';
import { ExitCode, UsageError } from '../../src/commands/exit-codes';

let dir: string;

beforeAll(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'forge-lint-sql-'));
});

afterAll(() => {
  fs.rmSync(dir, { recursive: true, force: true });
});

/** Runs `forge lint-sql ...args` in-process on a fresh program, the way src/cli.ts will, capturing stdout. */
async function run(args: string[]): Promise<{ code: number | undefined; stdout: string; error?: unknown }> {
  const program = new Command('forge').exitOverride();
  registerLintSql(program);
  let stdout = '';
  const write = jest.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
    stdout += chunk.toString();
    return true;
  });
  process.exitCode = undefined;
  try {
    await program.parseAsync(['node', 'forge', 'lint-sql', ...args]);
    const code = typeof process.exitCode === 'number' ? process.exitCode : undefined;
    return { code, stdout };
  } catch (error) {
    return { code: undefined, stdout, error };
  } finally {
    write.mockRestore();
    process.exitCode = undefined;
  }
}

function file(name: string, sql: string): string {
  const p = path.join(dir, name);
  fs.writeFileSync(p, sql);
  return p;
}

describe('forge lint-sql', () => {
  it("accepts the README's first migration, examples/agent_notes.sql, which creates what its comment says and nothing else", async () => {
    const example = path.join(__dirname, '..', '..', 'examples', 'agent_notes.sql');
    const { code, stdout } = await run([example, '--json']);
    expect(code).toBe(ExitCode.ok);
    const out = JSON.parse(stdout);
    expect(out.accepted).toBe(true);
    // The comment promises the agent's own table and an index on it, and says it adds no column to a core table.
    expect(out.statements.map((s: { rule: string }) => s.rule)).toEqual(['create-agent-table', 'create-agent-index']);
  });

  it('prints exactly one JSON object and exits 0 for an accepted migration', async () => {
    const f = file('ok.sql', 'CREATE TABLE agent_notes (id int);\nCREATE INDEX agent_notes_id ON agent_notes (id);\n');
    const { code, stdout } = await run([f, '--json']);
    expect(code).toBe(ExitCode.ok);
    expect(stdout.trim().split('\n')).toHaveLength(1);
    const out = JSON.parse(stdout);
    expect(out.accepted).toBe(true);
    expect(out.statements).toEqual([
      expect.objectContaining({ index: 0, kind: 'CreateStmt', accepted: true, rule: 'create-agent-table' }),
      expect.objectContaining({ index: 1, kind: 'IndexStmt', accepted: true, rule: 'create-agent-index' }),
    ]);
  });

  it('exits 1 with the refused statement, its rule and an actionable message for a rejected migration', async () => {
    const f = file('bad.sql', 'CREATE TABLE agent_a (id int);\nALTER TABLE users ALTER COLUMN email TYPE text;');
    const { code, stdout } = await run([f, '--json']);
    expect(code).toBe(ExitCode.refused);
    const out = JSON.parse(stdout);
    expect(out.accepted).toBe(false);
    expect(out.statements[1]).toMatchObject({
      index: 1,
      kind: 'AlterTableStmt',
      accepted: false,
      rule: 'core-table-alter',
      text: 'ALTER TABLE users ALTER COLUMN email TYPE text',
    });
    expect(out.statements[1].message).toContain('ADD COLUMN');
  });

  it('prints human text without --json', async () => {
    const f = file('human.sql', 'DROP TABLE users;');
    const { code, stdout } = await run([f]);
    expect(code).toBe(ExitCode.refused);
    expect(stdout).toContain('REJECTED (drop-forbidden)');
    expect(stdout).toContain('human.sql:1:1');
    expect(() => JSON.parse(stdout)).toThrow();
  });

  it('honours --schema', async () => {
    const f = file('schema.sql', 'CREATE TABLE app.agent_a (id int);');
    expect((await run([f, '--json'])).code).toBe(ExitCode.refused);
    expect((await run([f, '--json', '--schema', 'app'])).code).toBe(ExitCode.ok);
  });

  it('reads the migration from stdin for -', async () => {
    const stdin = Readable.from([Buffer.from('CREATE SEQUENCE agent_s;')]);
    const restore = jest.spyOn(process, 'stdin', 'get').mockReturnValue(stdin as unknown as typeof process.stdin);
    try {
      const { code, stdout } = await run(['-', '--json']);
      expect(code).toBe(ExitCode.ok);
      expect(JSON.parse(stdout).statements[0].rule).toBe('create-agent-sequence');
    } finally {
      restore.mockRestore();
    }
  });

  it('refuses a file that is not UTF-8 before parsing, naming the byte offset (invalid-utf8), in JSON and in text', async () => {
    const p = path.join(dir, 'latin1.sql');
    // "café" saved as Latin-1: the é is the single byte 0xe9, which begins no UTF-8 character.
    fs.writeFileSync(p, Buffer.concat([Buffer.from("CREATE TABLE agent_menu (dish text DEFAULT 'caf"), Buffer.from([0xe9]), Buffer.from("');\n")]));
    const json = await run([p, '--json']);
    expect(json.code).toBe(ExitCode.refused);
    const out = JSON.parse(json.stdout);
    expect(out).toMatchObject({ accepted: false, statements: [], problem: { rule: 'invalid-utf8', location: { line: 1, column: 48 } } });
    expect(out.problem.message).toContain('byte 0xe9 at byte 47');
    const text = await run([p]);
    expect(text.code).toBe(ExitCode.refused);
    expect(text.stdout).toContain('latin1.sql:1:48: rejected (invalid-utf8)');
  });

  it('throws a UsageError (exit 2 through the CLI) for a missing file', async () => {
    const { error } = await run([path.join(dir, 'missing.sql'), '--json']);
    expect(error).toBeInstanceOf(UsageError);
    expect((error as Error).message).toContain('no such file');
  });
});

describe('forge migrate', () => {
  it('refuses a file that is not UTF-8 before starting any run (a UsageError, exit 2), naming the rule and the byte', async () => {
    const p = path.join(dir, 'latin1-migrate.sql');
    fs.writeFileSync(p, Buffer.concat([Buffer.from('CREATE TABLE agent_x (id int); -- d'), Buffer.from([0xe9, 0x6a, 0xe0]), Buffer.from('\n')]));
    const program = new Command('forge').exitOverride();
    registerMigrate(program);
    // No Temporal is reachable here: the refusal must come before any connection is tried.
    const error = await program.parseAsync(['node', 'forge', 'migrate', '--name', 'latin1', p]).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(UsageError);
    expect((error as Error).message).toContain('invalid-utf8');
    expect((error as Error).message).toContain('byte 0xe9 at byte 35');
  });
});
