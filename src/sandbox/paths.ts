import { accessSync, constants, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';

let root: string | undefined;

/** The directory of the agent-forge package (works from src/ under ts-jest and from dist/ after a build). */
export function packageRoot(): string {
  if (root) return root;
  let dir = __dirname;
  while (!existsSync(join(dir, 'package.json')) || !existsSync(join(dir, 'src', 'sandbox', 'harness.cjs'))) {
    const up = dirname(dir);
    if (up === dir) throw new Error(`cannot find the agent-forge package root above ${__dirname}`);
    dir = up;
  }
  root = dir;
  return dir;
}

/** The harness the child runs first; shipped as plain JS because the child has nothing to compile TypeScript. */
export function harnessPath(): string {
  return join(packageRoot(), 'src', 'sandbox', 'harness.cjs');
}

/**
 * The installed packages a tool may import: the node_modules that holds Forge's own dependencies. In this checkout
 * that is `<package>/node_modules`; with Forge installed as a dependency, npm puts them in the project's node_modules,
 * beside Forge itself, and `<package>/node_modules` does not exist. zod (what tools import) says where it is.
 */
export function projectNodeModules(): string {
  return dirname(dirname(require.resolve('zod/package.json')));
}

/**
 * Where the per-run private directories go: `configured` (the operator's choice), else /dev/shm when writable
 * (memory-backed, so a run's few file operations cost microseconds), else the OS temp dir.
 */
export function sandboxTempRoot(configured?: string): string {
  if (configured) return configured;
  try {
    accessSync('/dev/shm', constants.W_OK);
    return '/dev/shm';
  } catch {
    return tmpdir();
  }
}
