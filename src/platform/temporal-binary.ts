import { spawn } from 'node:child_process';
import { accessSync, constants, statSync } from 'node:fs';
import path from 'node:path';
import { packageRoot } from '../sandbox/paths';
import { TemporalBinaryNotFoundError } from './errors';

const EXE = process.platform === 'win32' ? 'temporal.exe' : 'temporal';

/**
 * Where setup may have put the binary, after PATH: `$FORGE_HOME/bin` (go install), `$FORGE_HOME/venv/bin` (pip), and
 * last the project's own `.forge/`, so that a FORGE_HOME elsewhere (tests, a second platform) reuses its binary.
 */
export function temporalBinarySearchPath(env: NodeJS.ProcessEnv = process.env): string[] {
  const home = path.resolve(env.FORGE_HOME?.trim() ? env.FORGE_HOME : '.forge');
  const own = path.join(packageRoot(), '.forge');
  const dirs = (env.PATH ?? '').split(path.delimiter).filter((d) => d !== '');
  return [...new Set([...dirs, path.join(home, 'bin'), path.join(home, 'venv', 'bin'), path.join(own, 'bin'), path.join(own, 'venv', 'bin')])];
}

function isExecutableFile(file: string): boolean {
  try {
    if (!statSync(file).isFile()) return false;
    accessSync(file, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/**
 * Finds the `temporal` CLI the way scripts/setup.js does (PATH, then $FORGE_HOME/bin, then $FORGE_HOME/venv/bin).
 * @returns the absolute path, or undefined when setup has not installed it.
 */
export function findTemporalBinary(env: NodeJS.ProcessEnv = process.env): string | undefined {
  for (const dir of temporalBinarySearchPath(env)) {
    const candidate = path.resolve(dir, EXE);
    if (isExecutableFile(candidate)) return candidate;
  }
  return undefined;
}

/** scripts/setup.js, shipped with the package: the one place that knows how to install the binary. */
function setupScript(): string {
  return path.join(packageRoot(), 'scripts', 'setup.js');
}

/**
 * The command that installs the binary for a Forge with this environment, as its user types it: `npm run setup` in a
 * checkout, `npx forge setup` in a project that installed the package (FORGE_HOME=... first when it is not ./.forge).
 */
export function setupCommand(env: NodeJS.ProcessEnv = process.env): string {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const setup = require(setupScript()) as { setupCommand(env: NodeJS.ProcessEnv): string };
  return setup.setupCommand(env);
}

/** Runs setup in this process (`forge setup`): finds or installs the binary, says what it did on stderr; the exit code. */
export function runSetup(env: NodeJS.ProcessEnv = process.env): number {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const setup = require(setupScript()) as { main(env: NodeJS.ProcessEnv): number };
  return setup.main(env);
}

/** Like {@link findTemporalBinary}, but throws a TemporalBinaryNotFoundError that tells the user to run setup. */
export function requireTemporalBinary(env: NodeJS.ProcessEnv = process.env): string {
  const found = findTemporalBinary(env);
  if (found === undefined) throw new TemporalBinaryNotFoundError(temporalBinarySearchPath(env), setupCommand(env));
  return found;
}

/**
 * The temporal CLI for a Forge with this environment, installed first if it is nowhere to be found: runs setup
 * (scripts/setup.js, as `npm run setup` would) with FORGE_HOME set to `home`, so the binary lands where this Forge
 * and its next start look for it, and passes setup's lines to `log`. A program that embeds Forge then needs no step
 * of its own before startForge(). In a child process, so the program's event loop goes on during the download.
 * @throws TemporalBinaryNotFoundError when setup could not install it, with setup's reasons and the command to re-run.
 */
export async function ensureTemporalBinary(options: { env?: NodeJS.ProcessEnv; home: string; log: (line: string) => void }): Promise<string> {
  const env: NodeJS.ProcessEnv = { ...(options.env ?? process.env), FORGE_HOME: options.home };
  const found = findTemporalBinary(env);
  if (found !== undefined) return found;
  options.log(`forge: no temporal CLI on PATH or in ${options.home}: installing it (${setupCommand(env)}) ...`);
  const lines: string[] = [];
  const code = await new Promise<number | string>((resolve) => {
    const child = spawn(process.execPath, [setupScript()], { env, stdio: ['ignore', 'ignore', 'pipe'] });
    let pending = '';
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
      const parts = (pending + chunk).split('\n');
      pending = parts.pop() ?? '';
      for (const line of parts) {
        lines.push(line);
        options.log(line);
      }
    });
    child.on('error', (err) => resolve(err.message));
    child.on('close', (status, signal) => {
      if (pending !== '') {
        lines.push(pending);
        options.log(pending);
      }
      resolve(status ?? signal ?? 'unknown');
    });
  });
  const installed = findTemporalBinary(env);
  if (installed !== undefined) return installed;
  const output = lines.join('\n').trim() || `setup exited ${code} without a word`;
  throw new TemporalBinaryNotFoundError(temporalBinarySearchPath(env), setupCommand(env), output);
}
