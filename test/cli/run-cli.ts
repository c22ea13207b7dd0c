import { spawn } from 'node:child_process';
import path from 'node:path';

/** The repository root; the CLI runs from its build (`bin/forge.js` requires dist/, built by `npm test`). */
export const ROOT = path.resolve(__dirname, '..', '..');
export const FORGE_BIN = path.join(ROOT, 'bin', 'forge.js');
export const TOOL_FIXTURES = path.join(ROOT, 'test', 'fixtures', 'tools');

export interface CliResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  durationMs: number;
}

/**
 * A controlled environment: only PATH and HOME from the test process (no TEMPORAL_ADDRESS, DATABASE_URL or FORGE_*
 * leaking in), plus what the test passes. A value of `undefined` removes the variable.
 */
export function cliEnv(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { PATH: process.env.PATH, HOME: process.env.HOME, NO_COLOR: '1' };
  for (const [key, value] of Object.entries(extra)) {
    if (value === undefined) delete env[key];
    else env[key] = value;
  }
  return env;
}

export interface RunOptions {
  env?: NodeJS.ProcessEnv;
  stdin?: string;
  cwd?: string;
  timeoutMs?: number;
}

/** Runs `node bin/forge.js ...args` to completion. */
export function runForge(args: string[], options: RunOptions = {}): Promise<CliResult> {
  return runCommand(process.execPath, [FORGE_BIN, ...args], options);
}

/** Runs `command ...args` to completion in the CLI's controlled environment, collecting its output. */
export function runCommand(command: string, args: string[], options: RunOptions = {}): Promise<CliResult> {
  const started = Date.now();
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, {
      env: options.env ?? cliEnv(),
      cwd: options.cwd ?? ROOT,
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), options.timeoutMs ?? 90_000);
    child.once('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    child.once('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr, durationMs: Date.now() - started });
    });
    child.stdin.end(options.stdin ?? '');
  });
}

/** The whole of stdout must be exactly one JSON object (one line, as printResult writes it). */
export function parseJsonStdout(result: CliResult): Record<string, unknown> {
  const text = result.stdout;
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (err) {
    throw new Error(`stdout is not one JSON value (${(err as Error).message}):\n${text}\n--- stderr ---\n${result.stderr}`);
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
    throw new Error(`stdout is JSON but not an object:\n${text}`);
  }
  expect(text.trimEnd().split('\n')).toHaveLength(1);
  return parsed as Record<string, unknown>;
}

/** Runs with --json appended and returns the exit code and the parsed object. */
export async function runForgeJson(
  args: string[],
  options: Parameters<typeof runForge>[1] = {},
): Promise<{ code: number | null; json: Record<string, unknown>; stderr: string; durationMs: number }> {
  const result = await runForge([...args, '--json'], options);
  return { code: result.code, json: parseJsonStdout(result), stderr: result.stderr, durationMs: result.durationMs };
}
