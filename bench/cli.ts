import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { percentile, round, statsRow } from './stats';
import type { Bench } from './types';

/** The repository root, from dist/bench/ (compiled) or bench/ (sources). */
const ROOT = [path.join(__dirname, '..', '..'), path.join(__dirname, '..')].find((d) => existsSync(path.join(d, 'bin', 'forge.js')))!;
const RUNS = 20;

/** Wall time of one process, start to exit, in ms. */
function timed(args: string[]): number {
  const started = performance.now();
  const r = spawnSync(process.execPath, args, { cwd: ROOT, stdio: ['ignore', 'ignore', 'pipe'], encoding: 'utf8' });
  const ms = performance.now() - started;
  if (r.status !== 0) throw new Error(`node ${args.join(' ')} exited ${r.status}: ${r.stderr.slice(-500)}`);
  return ms;
}

/**
 * Issue 14, "a CLI that starts fast": an agent that shells out to `forge` pays its start-up on every call. `forge
 * --version` against a bare `node -e 0` (the floor no CLI can beat), interleaved, p50 of 20 each; and `forge lint-sql`
 * of one statement, which loads only the policy (PostgreSQL's parser) and no Temporal.
 */
export const cliBench: Bench = {
  name: 'cli',
  description: 'forge --version vs node -e 0, and forge lint-sql of one statement (process start to exit)',
  async run() {
    const dir = mkdtempSync(path.join(tmpdir(), 'forge-bench-cli-'));
    try {
      const sql = path.join(dir, 'one.sql');
      writeFileSync(sql, 'CREATE TABLE agent_bench_notes (id bigint PRIMARY KEY, body text);\n');
      const forge = path.join(ROOT, 'bin', 'forge.js');
      const node: number[] = [];
      const version: number[] = [];
      const lint: number[] = [];
      timed([forge, '--version']); // warm the file cache
      for (let i = 0; i < RUNS; i++) {
        node.push(timed(['-e', '0']));
        version.push(timed([forge, '--version']));
        lint.push(timed([forge, 'lint-sql', sql]));
      }
      process.stdout.write(`${statsRow('node -e 0', node)}\n${statsRow('forge --version', version)}\n${statsRow('forge lint-sql (1 statement)', lint)}\n`);
      const ratio = percentile(version, 50) / percentile(node, 50);
      process.stdout.write(`forge --version / node -e 0 (p50): ${round(ratio)}×  (goal ≤ 2.0×)\n`);
      return { cli_startup_vs_node: round(ratio), lint_sql_cli_p50_ms: round(percentile(lint, 50), 0) };
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  },
};
