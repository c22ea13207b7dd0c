import { spawn } from 'node:child_process';
import { closeSync, existsSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { cliEnv, FORGE_BIN, parseJsonStdout, ROOT, runCommand, type CliResult } from './run-cli';

/**
 * Issue 8: the CLI must not exit before its output is drained. On a pipe Node writes asynchronously: what the kernel's
 * pipe buffer (64 KiB) cannot take waits inside the process, and an exit at that moment drops it, so a reader that is
 * a little slow got the first 64 KiB of a large `--json` answer. These runs use the real binary behind a pipe whose
 * reader waits a moment before it reads, long enough for a CLI that does not wait for its output to have exited.
 */
const STATEMENTS = 900;
const PAUSE_MS = 1500;

/**
 * 900 statements, each with a long string literal that the answer echoes in its `text` (double quotes, which JSON
 * escapes, make the answer about twice the input): about 0.9 MB of SQL, under the policy's 1 MiB and 1,000-statement
 * limits, for an answer of about 2 MB.
 */
function largeMigration(): string {
  const filler = '"'.repeat(960);
  const lines: string[] = [];
  for (let i = 0; i < STATEMENTS; i++) {
    lines.push(`CREATE TABLE agent_drain_${i} (id bigint PRIMARY KEY, note text DEFAULT '${filler}');`);
  }
  return lines.join('\n') + '\n';
}

/**
 * The shell pipelines: the CLI's `slow` stream goes through a kernel pipe (64 KiB) to a reader that sleeps before it
 * reads, the way `forge ... | slow-consumer` runs; the CLI's exit code comes back as the shell's. A stream paused in
 * this process would not do: Node's child pipes are socket pairs that buffer a few hundred kB, and a paused stream
 * keeps reading into its own buffers.
 */
const SLEEP = `sleep ${PAUSE_MS / 1000}`;
const SLOW_PIPELINE = {
  stdout: `"$1" "$2" "\${@:3}" | { ${SLEEP}; cat; }; exit "\${PIPESTATUS[0]}"`,
  // The CLI's stderr into the pipe, its stdout to the shell's stdout (kept on fd 3 for the moment).
  stderr: `{ "$1" "$2" "\${@:3}" 2>&1 1>&3 3>&- | { ${SLEEP}; cat; } >&2 3>&-; exit "\${PIPESTATUS[0]}"; } 3>&1`,
};

/** Runs `node bin/forge.js ...args` like run-cli.ts's runForge, with its `slow` stream read late through a pipe. */
function runForgeSlowReader(args: string[], slow: 'stdout' | 'stderr', stdin = ''): Promise<CliResult> {
  return runCommand('bash', ['-c', SLOW_PIPELINE[slow], 'bash', process.execPath, FORGE_BIN, ...args], { stdin, timeoutMs: 60_000 });
}

/** Checks the answer statement by statement: a truncated answer would not even parse. */
function expectEveryStatement(json: Record<string, unknown>): void {
  expect(json.accepted).toBe(true);
  const statements = json.statements as { index: number; accepted: boolean; text: string }[];
  expect(statements).toHaveLength(STATEMENTS);
  statements.forEach((s, i) => {
    expect(s.index).toBe(i);
    expect(s.accepted).toBe(true);
    expect(s.text).toContain(`agent_drain_${i} `);
  });
}

const sql = largeMigration();
let dir: string;

beforeAll(() => {
  dir = mkdtempSync(path.join(existsSync('/dev/shm') ? '/dev/shm' : tmpdir(), 'forge-cli-drain-'));
});

afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('the CLI drains its output before it exits', () => {
  test('the migration stays within the policy limits (1 MiB, 1,000 statements)', () => {
    expect(Buffer.byteLength(sql)).toBeLessThan(1024 * 1024);
    expect(sql.split('\n').filter(Boolean)).toHaveLength(STATEMENTS);
  });

  test('lint-sql --json through a pipe read slowly: one whole JSON object with every statement, exit 0', async () => {
    const result = await runForgeSlowReader(['lint-sql', '--json', '-'], 'stdout', sql);
    expect(Buffer.byteLength(result.stdout)).toBeGreaterThan(1_500_000);
    expectEveryStatement(parseJsonStdout(result));
    expect(result.code).toBe(0);
  });

  test('lint-sql human text through a pipe read slowly: every statement and the closing line, exit 0', async () => {
    const result = await runForgeSlowReader(['lint-sql', '-'], 'stdout', sql);
    expect(Buffer.byteLength(result.stdout)).toBeGreaterThan(Buffer.byteLength(sql));
    expect(result.stdout.match(/\[\d+\] CreateStmt: accepted/g)).toHaveLength(STATEMENTS);
    expect(result.stdout).toMatch(/stdin: accepted \(900 statement\(s\)\)\n$/);
    expect(result.code).toBe(0);
  });

  test('lint-sql --json into a file: the whole object, exit 0', async () => {
    const input = path.join(dir, 'large.sql');
    writeFileSync(input, sql);
    const file = path.join(dir, 'answer.json');
    const fd = openSync(file, 'w');
    const code = await new Promise<number | null>((resolve, reject) => {
      const child = spawn(process.execPath, [FORGE_BIN, 'lint-sql', '--json', input], {
        env: cliEnv(),
        cwd: ROOT,
        stdio: ['ignore', fd, 'ignore'],
      });
      child.once('error', reject);
      child.once('close', resolve);
    }).finally(() => closeSync(fd));
    const stdout = readFileSync(file, 'utf8');
    expectEveryStatement(parseJsonStdout({ code, signal: null, stdout, stderr: '', durationMs: 0 }));
    expect(code).toBe(0);
  });

  // Commander echoes an unknown option in its usage error, then the command's help: a 100 kB option name makes both
  // streams of the usage path larger than a pipe buffer (one argument may be up to 128 kB on Linux).
  const option = `--${'y'.repeat(100_000)}`;

  test('a usage error on stderr read slowly: the whole message and the help after it, exit 2', async () => {
    const result = await runForgeSlowReader(['lint-sql', option], 'stderr');
    expect(Buffer.byteLength(result.stderr)).toBeGreaterThan(option.length);
    expect(result.stderr).toContain(`unknown option '${option}'`);
    expect(result.stderr).toMatch(/-h, --help\s+display help for command\n$/);
    expect(result.stdout).toBe('');
    expect(result.code).toBe(2);
  });

  test('a usage error with --json through a pipe read slowly: the whole {error} object, exit 2', async () => {
    const result = await runForgeSlowReader(['lint-sql', '--json', option], 'stdout');
    expect(Buffer.byteLength(result.stdout)).toBeGreaterThan(option.length);
    expect(parseJsonStdout(result)).toEqual({ error: `unknown option '${option}'` });
    expect(result.code).toBe(2);
  });
});
