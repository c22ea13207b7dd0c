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

/** Like {@link findTemporalBinary}, but throws a TemporalBinaryNotFoundError that tells the user to run setup. */
export function requireTemporalBinary(env: NodeJS.ProcessEnv = process.env): string {
  const found = findTemporalBinary(env);
  if (found === undefined) throw new TemporalBinaryNotFoundError(temporalBinarySearchPath(env));
  return found;
}
