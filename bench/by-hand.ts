import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { reapedChildrenCpuMs } from './stats';

/** The repository root (from bench/ or dist/bench/): where node_modules, so zod and TypeScript, are found. */
const ROOT = path.resolve(__dirname, __dirname.includes(`${path.sep}dist${path.sep}`) ? '../..' : '..');
const bin = (pkg: string, file: string) => path.join(ROOT, 'node_modules', pkg, 'bin', file);

export interface ByHandCpu {
  compileMs: number;
  typecheckMs: number;
}

/**
 * What compiling and type-checking a tool costs by hand, cold: the CPU (user + system, every process, esbuild's own
 * binary included) of `esbuild tool.ts` and of `tsc --noEmit` on the tool alone, each in a fresh process, as a person
 * would run them. The tsc options are those Forge checks a tool with (src/sandbox/typecheck-thread.cjs), so the work
 * compared is the same. `dir` must lie inside the repository, where `zod` resolves.
 */
export function byHandCpuMs(dir: string, source: string): ByHandCpu {
  const ts = path.join(dir, 'tool.ts');
  writeFileSync(ts, source);
  const timed = (command: string, args: string[]): number => {
    const before = reapedChildrenCpuMs();
    const run = spawnSync(command, args, { cwd: dir, encoding: 'utf8', env: { PATH: process.env.PATH } });
    if (run.status !== 0) throw new Error(`${path.basename(args[0] ?? command)} failed (${run.status}): ${run.stdout}${run.stderr}`);
    return reapedChildrenCpuMs() - before;
  };
  // esbuild's bin is its native binary.
  const compileMs = timed(bin('esbuild', 'esbuild'), [
    ts,
    '--format=esm',
    '--platform=node',
    '--target=es2022',
    `--outfile=${path.join(dir, 'by-hand.mjs')}`,
    '--log-level=warning',
  ]);
  const typecheckMs = timed(process.execPath, [
    bin('typescript', 'tsc'),
    '--noEmit',
    '--strict',
    '--target',
    'es2022',
    '--module',
    'preserve',
    '--moduleResolution',
    'bundler',
    '--skipLibCheck',
    '--types',
    'node',
    ts,
  ]);
  return { compileMs, typecheckMs };
}
