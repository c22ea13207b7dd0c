import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { findFreePort } from '../../src/process/free-port';
import { cliEnv, parseJsonStdout, runForge, runForgeJson, TOOL_FIXTURES } from './run-cli';

/**
 * The commands that need no platform (`forge sandbox`, `forge lint-sql`), through the real binary: exit codes, one
 * JSON object on stdout with --json, human text and errors elsewhere (CLI.md).
 */
const fixture = (name: string) => path.join(TOOL_FIXTURES, name);
let dir: string;

beforeAll(() => {
  dir = mkdtempSync(path.join(existsSync('/dev/shm') ? '/dev/shm' : tmpdir(), 'forge-cli-offline-'));
  // A tool that writes to stderr and then fails: its stderr must come back as stderrTail.
  writeFileSync(
    path.join(dir, 'noisy_fail.ts'),
    `import { z } from 'zod';
export default { name: 'noisy_fail', inputSchema: z.object({}), async execute() { console.error('about to fail: marker-42'); throw new Error('nope'); } };
`,
  );
  // The type mistake, which its test input never trips over (it ran and passed before the typecheck stage).
  writeFileSync(
    path.join(dir, 'labeller.ts'),
    `import { z } from 'zod';
export default {
  name: 'labeller',
  inputSchema: z.object({ n: z.number() }),
  async execute(input: { n: number }) {
    const label: number = 'n is ' + input.n;
    return { label };
  },
};
`,
  );
  writeFileSync(
    path.join(dir, 'ok.sql'),
    'CREATE TABLE agent_notes (id bigint PRIMARY KEY, body text);\nCREATE INDEX agent_notes_body ON agent_notes (body);\n',
  );
  writeFileSync(path.join(dir, 'bad.sql'), 'CREATE TABLE agent_a (id int);\nDROP TABLE users;\n');
});

afterAll(() => rmSync(dir, { recursive: true, force: true }));

test('forge --version prints the package version and exits 0 (CLI.md)', async () => {
  const { version } = JSON.parse(readFileSync(path.join(__dirname, '..', '..', 'package.json'), 'utf8')) as { version: string };
  const r = await runForge(['--version']);
  expect(r).toMatchObject({ code: 0, stdout: `${version}\n` });
});

describe('forge sandbox', () => {
  test('a passing tool: exit 0, {status: "passed", durationMs, output}, nothing but the object on stdout', async () => {
    const { code, json } = await runForgeJson(['sandbox', fixture('celsius_to_fahrenheit.ts'), '--test-input', '{"celsius":100}']);
    expect(code).toBe(0);
    expect(json).toMatchObject({ status: 'passed', output: { fahrenheit: 212 } });
    expect(typeof json.durationMs).toBe('number');
    expect(json.error).toBeUndefined();
  });

  test('without --json: the verdict as text on stdout, exit 0', async () => {
    const r = await runForge(['sandbox', fixture('celsius_to_fahrenheit.ts'), '--test-input', '{"celsius":0}']);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^celsius_to_fahrenheit: passed in \d+ ms/);
    expect(r.stdout).toContain('"fahrenheit": 32');
    expect(() => JSON.parse(r.stdout)).toThrow();
  });

  test('a tool that throws: exit 1, status "failed" with the error', async () => {
    const { code, json } = await runForgeJson(['sandbox', fixture('throws.ts')]);
    expect(code).toBe(1);
    expect(json).toMatchObject({ status: 'failed' });
    expect(json.error).toEqual(expect.stringContaining('boom from execute'));
    expect(json.output).toBeUndefined();
  });

  test("a failing tool's stderr comes back as stderrTail", async () => {
    const { code, json } = await runForgeJson(['sandbox', path.join(dir, 'noisy_fail.ts')]);
    expect(code).toBe(1);
    expect(json).toMatchObject({ status: 'failed', error: expect.stringContaining('nope'), stderrTail: expect.stringContaining('marker-42') });
  });

  test('a tool that exits: exit 1 with a non-passing verdict', async () => {
    const { code, json } = await runForgeJson(['sandbox', fixture('exit_one.ts')]);
    expect(code).toBe(1);
    expect(json.status).not.toBe('passed');
    expect(typeof json.error).toBe('string');
  });

  test("the name defaults to the file's base name; --name overrides it", async () => {
    // wrong_name.ts declares a name other than its file's: the default name is checked against it.
    const byFile = await runForgeJson(['sandbox', fixture('wrong_name.ts')]);
    expect(byFile.code).toBe(1);
    expect(byFile.json.error).toEqual(expect.stringContaining('"wrong_name"'));
    // celsius_to_fahrenheit.ts deployed under another name is refused, naming both.
    const renamed = await runForgeJson(['sandbox', fixture('celsius_to_fahrenheit.ts'), '--name', 'other_name', '--test-input', '{"celsius":1}']);
    expect(renamed.code).toBe(1);
    expect(renamed.json.error).toEqual(expect.stringContaining('"other_name"'));
    // ... and says what to do: a fix that works even when the module's own name is not a valid tool name.
    expect(renamed.json.error).toEqual(expect.stringContaining('set the module\'s `name` to "other_name"'));
    // The same file copied under another base name, with --name set back to the tool's own name, passes.
    const copy = path.join(dir, 'copy_of_tool.ts');
    writeFileSync(copy, readFixture('celsius_to_fahrenheit.ts'));
    const named = await runForgeJson(['sandbox', copy, '--name', 'celsius_to_fahrenheit', '--test-input', '{"celsius":1}']);
    expect(named.code).toBe(0);
    expect(named.json.status).toBe('passed');
  });

  test('a type error: exit 1, status "failed" at phase typecheck with file:line:col, TS2322 and the message, as a deployment reports it', async () => {
    const { code, json } = await runForgeJson(['sandbox', path.join(dir, 'labeller.ts'), '--test-input', '{"n":1}']);
    expect(code).toBe(1);
    expect(json).toMatchObject({
      status: 'failed',
      error: "the source does not type-check: labeller.ts:6:11: TS2322: Type 'string' is not assignable to type 'number'.",
      diagnostics: {
        phase: 'typecheck',
        typeErrors: [
          {
            message: "labeller.ts:6:11: TS2322: Type 'string' is not assignable to type 'number'.",
            code: 'TS2322',
            location: { file: 'labeller.ts', line: 6, column: 11, lineText: "    const label: number = 'n is ' + input.n;" },
          },
        ],
      },
    });
    expect(json.output).toBeUndefined();
    const human = await runForge(['sandbox', path.join(dir, 'labeller.ts'), '--test-input', '{"n":1}']);
    expect(human.code).toBe(1);
    expect(human.stdout).toMatch(/^labeller: failed in \d+ ms\nthe source does not type-check: labeller\.ts:6:11: TS2322: /);
  });

  test('FORGE_TYPECHECK=warn runs the tool and reports the type errors beside its verdict; =off reports none', async () => {
    const warn = await runForgeJson(['sandbox', path.join(dir, 'labeller.ts'), '--test-input', '{"n":1}'], { env: cliEnv({ FORGE_TYPECHECK: 'warn' }) });
    expect(warn.code).toBe(0);
    expect(warn.json).toMatchObject({
      status: 'passed',
      output: { label: 'n is 1' },
      diagnostics: { typeErrors: [expect.objectContaining({ code: 'TS2322' })] },
    });
    const human = await runForge(['sandbox', path.join(dir, 'labeller.ts'), '--test-input', '{"n":1}'], { env: cliEnv({ FORGE_TYPECHECK: 'warn' }) });
    expect(human.stdout).toContain('type errors (FORGE_TYPECHECK=warn):\n  labeller.ts:6:11: TS2322: ');
    const off = await runForgeJson(['sandbox', path.join(dir, 'labeller.ts'), '--test-input', '{"n":1}'], { env: cliEnv({ FORGE_TYPECHECK: 'off' }) });
    expect(off.code).toBe(0);
    expect(off.json).toMatchObject({ status: 'passed', output: { label: 'n is 1' } });
    expect((off.json.diagnostics as { typeErrors?: unknown } | undefined)?.typeErrors).toBeUndefined();
  });

  test('--test-input that is not JSON: exit 2 naming the flag; JSON error object with --json', async () => {
    const human = await runForge(['sandbox', fixture('celsius_to_fahrenheit.ts'), '--test-input', 'not json']);
    expect(human.code).toBe(2);
    expect(human.stdout).toBe('');
    expect(human.stderr).toMatch(/--test-input is not JSON/);
    const { code, json } = await runForgeJson(['sandbox', fixture('celsius_to_fahrenheit.ts'), '--test-input', '{celsius: 1']);
    expect(code).toBe(2);
    expect(json.error).toEqual(expect.stringContaining('--test-input is not JSON'));
  });

  test('a missing file: exit 2, "no such file"', async () => {
    const missing = path.join(dir, 'does_not_exist.ts');
    const { code, json } = await runForgeJson(['sandbox', missing]);
    expect(code).toBe(2);
    expect(json.error).toEqual(expect.stringContaining(`cannot read ${missing}: no such file`));
    const human = await runForge(['sandbox', missing]);
    expect(human.code).toBe(2);
    expect(human.stderr).toMatch(/no such file/);
  });

  test('a file that is a directory: exit 2', async () => {
    const sub = path.join(dir, 'a_dir');
    mkdirSync(sub, { recursive: true });
    const { code, json } = await runForgeJson(['sandbox', sub]);
    expect(code).toBe(2);
    expect(json.error).toEqual(expect.stringContaining('it is a directory'));
  });

  test('a file name that is no tool name and no --name: exit 2 telling to pass --name', async () => {
    const odd = path.join(dir, 'Not-A-Name.ts');
    writeFileSync(odd, readFixture('celsius_to_fahrenheit.ts'));
    const { code, json } = await runForgeJson(['sandbox', odd]);
    expect(code).toBe(2);
    expect(json.error).toEqual(expect.stringContaining('--name'));
  });

  test('bad usage (no file, unknown flag): exit 2, and with --json still one JSON object with error', async () => {
    const noFile = await runForgeJson(['sandbox']);
    expect(noFile.code).toBe(2);
    expect(noFile.json.error).toEqual(expect.stringContaining("missing required argument 'file'"));
    const unknown = await runForge(['sandbox', fixture('throws.ts'), '--bogus']);
    expect(unknown.code).toBe(2);
    expect(unknown.stdout).toBe('');
    expect(unknown.stderr).toMatch(/unknown option '--bogus'/);
  });
});

describe('forge lint-sql', () => {
  test('an accepted migration: exit 0, {accepted: true, statements: [{index, kind, accepted}]}', async () => {
    const { code, json } = await runForgeJson(['lint-sql', path.join(dir, 'ok.sql')]);
    expect(code).toBe(0);
    expect(json.accepted).toBe(true);
    expect(json.statements).toEqual([
      expect.objectContaining({ index: 0, kind: 'CreateStmt', accepted: true }),
      expect.objectContaining({ index: 1, kind: 'IndexStmt', accepted: true }),
    ]);
  });

  test('a rejected migration: exit 1, the refused statement carries rule and message', async () => {
    const { code, json } = await runForgeJson(['lint-sql', path.join(dir, 'bad.sql')]);
    expect(code).toBe(1);
    expect(json.accepted).toBe(false);
    const statements = json.statements as { index: number; accepted: boolean; rule?: string; message?: string }[];
    expect(statements).toHaveLength(2);
    expect(statements[1]).toMatchObject({ index: 1, accepted: false, rule: expect.any(String), message: expect.any(String) });
  });

  test('human output: the report on stdout, exit code as with --json', async () => {
    const r = await runForge(['lint-sql', path.join(dir, 'bad.sql')]);
    expect(r.code).toBe(1);
    expect(r.stdout).toMatch(/REJECTED/);
    expect(r.stdout).toMatch(/rejected: 1 of 2 statement\(s\) refused/);
  });

  test('- reads stdin', async () => {
    const accepted = await runForgeJson(['lint-sql', '-'], { stdin: 'CREATE SEQUENCE agent_seq;' });
    expect(accepted.code).toBe(0);
    expect(accepted.json).toMatchObject({ accepted: true, statements: [expect.objectContaining({ kind: 'CreateSeqStmt' })] });
    const rejected = await runForgeJson(['lint-sql', '-'], { stdin: 'DROP TABLE users;' });
    expect(rejected.code).toBe(1);
    expect(rejected.json.accepted).toBe(false);
  });

  test('a missing file: exit 2 with a clear message', async () => {
    const { code, json } = await runForgeJson(['lint-sql', path.join(dir, 'nope.sql')]);
    expect(code).toBe(2);
    expect(json.error).toEqual(expect.stringContaining('no such file'));
    const human = await runForge(['lint-sql', path.join(dir, 'nope.sql')]);
    expect(human.code).toBe(2);
    expect(human.stdout).toBe('');
    expect(human.stderr).toMatch(/^forge: cannot read .*nope\.sql: no such file\n$/);
  });

  test('needs no platform: works with TEMPORAL_ADDRESS at a closed port and no DATABASE_URL', async () => {
    const r = await runForge(['lint-sql', path.join(dir, 'ok.sql'), '--json'], { env: cliEnv({ TEMPORAL_ADDRESS: '127.0.0.1:1' }) });
    expect(r.code).toBe(0);
    expect(parseJsonStdout(r).accepted).toBe(true);
  });
});

function readFixture(name: string): string {
  return readFileSync(fixture(name), 'utf8');
}

describe('an unreachable platform', () => {
  // Every command that needs Temporal, with TEMPORAL_ADDRESS at a local port nothing listens on.
  const commands = (sqlFile: string, toolFile: string): [string, string[]][] => [
    ['deploy', ['deploy', toolFile, '--test-input', '{"celsius":1}']],
    ['tools', ['tools']],
    ['rollback', ['rollback', 'celsius_to_fahrenheit']],
    ['delete', ['delete', 'celsius_to_fahrenheit']],
    ['migrate', ['migrate', '--name', 'm1', sqlFile]],
    ['migrations', ['migrations']],
  ];

  test('deploy, tools, rollback, delete, migrate, migrations: exit 3 with one sentence, well under 10 s', async () => {
    const port = await findFreePort();
    const env = cliEnv({ TEMPORAL_ADDRESS: `127.0.0.1:${port}`, FORGE_HOME: path.join(dir, 'home') });
    const runs = commands(path.join(dir, 'ok.sql'), fixture('celsius_to_fahrenheit.ts')).flatMap(([name, args]) => [
      runForge([...args, '--json'], { env }).then((r) => ({ name, json: true, r })),
      runForge(args, { env }).then((r) => ({ name, json: false, r })),
    ]);
    for (const { name, json, r } of await Promise.all(runs)) {
      const label = `${name}${json ? ' --json' : ''}`;
      expect({ label, code: r.code }).toEqual({ label, code: 3 });
      expect({ label, fast: r.durationMs < 10_000 }).toEqual({ label, fast: true });
      if (json) {
        const out = parseJsonStdout(r);
        expect(out.error).toEqual(expect.stringContaining(`Cannot reach the Temporal service at 127.0.0.1:${port}`));
        expect(r.stderr).toBe('');
      } else {
        expect({ label, stdout: r.stdout }).toEqual({ label, stdout: '' });
        // One line, one sentence, no stack trace.
        expect(r.stderr).toMatch(new RegExp(`^forge: Cannot reach the Temporal service at 127\\.0\\.0\\.1:${port}: [^\\n]+\\n$`));
        expect(r.stderr).not.toMatch(/\n\s+at /);
      }
    }
  }, 60_000);

  test('a refused port is reported in about a second, not after the client’s connect deadline', async () => {
    const port = await findFreePort();
    const r = await runForge(['tools', '--json'], { env: cliEnv({ TEMPORAL_ADDRESS: `127.0.0.1:${port}` }) });
    expect(r.code).toBe(3);
    expect(r.durationMs).toBeLessThan(4_000);
  });
});
