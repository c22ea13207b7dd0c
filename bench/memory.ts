import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { startPlatformProcess } from './platform';
import { rssMib } from './stats';
import type { Bench } from './types';

/** How long the platform idles after "Forge is up" before its memory is read (the type checker warms meanwhile). */
const SETTLE_MS = Number(process.env.BENCH_MEMORY_SETTLE_MS ?? 20_000);

/**
 * The resident memory of `forge up`'s process (the worker with its embedded database, the Temporal SDK and the x402
 * stack; the dev server is a process of its own) idle: at a first start, which creates the database, and at restarts
 * of the same FORGE_HOME with every capability (FORGE_X402_DEV=1: the worker runs the local chain's buyer and seller)
 * and without the type checker. What the embedded database holds is measured apart, by opening the same data
 * directory alone in a fresh process.
 */
export const memoryBench: Bench = {
  name: 'memory',
  description: "forge up's resident memory idle: first start, restarts, and what its parts hold",
  async run() {
    const home = mkdtempSync(path.join(existsSync('/dev/shm') ? '/dev/shm' : tmpdir(), 'forge-bench-memory-'));
    const idle = async (env: Record<string, string> = {}) => {
      const platform = await startPlatformProcess('memory', { home, env });
      try {
        await sleep(SETTLE_MS);
        return rssMib(platform.pid);
      } finally {
        await platform.stop();
      }
    };
    try {
      const first = await idle();
      const restart = await idle();
      const everything = await idle({ FORGE_X402_DEV: '1' });
      const noTypecheck = await idle({ FORGE_TYPECHECK: 'off' });
      const database = databaseAloneMib(path.join(home, 'pgdata'));
      const typechecker = restart - noTypecheck;
      const x402 = everything - restart;
      console.log(`first start (creates the database)        ${first} MiB`);
      console.log(`restart                                   ${restart} MiB`);
      console.log(`restart, every capability (x402 dev)      ${everything} MiB   (goal ≤ 512)`);
      console.log(`restart, FORGE_TYPECHECK=off              ${noTypecheck} MiB`);
      console.log('what the parts hold (differences of the runs above, and the database opened alone):');
      console.log(`  embedded database (PGlite thread)       ${database.opened - database.node} MiB  (a bare node process: ${database.node} MiB)`);
      console.log(`  type checker thread (warm)              ${typechecker} MiB`);
      console.log(`  x402 stack (buyer, seller, chain reads) ${x402} MiB`);
      console.log(`  the rest (node, Temporal SDK and workflow isolates, activities)  ${restart - typechecker - (database.opened - database.node)} MiB`);
      return {
        worker_rss_idle_mib: everything,
        worker_rss_idle_restart_mib: restart,
        worker_rss_first_start_mib: first,
        worker_rss_typechecker_mib: typechecker,
        worker_rss_database_mib: database.opened - database.node,
        worker_rss_x402_mib: x402,
      };
    } finally {
      rmSync(home, { recursive: true, force: true });
    }
  },
};

/** A fresh node process's RSS, then with the embedded database of `dataDir` opened as the worker opens it. */
function databaseAloneMib(dataDir: string): { node: number; opened: number } {
  const client = path.join(__dirname, '..', 'src', 'db', 'pglite-client.js');
  const script = `
    const fs = require('node:fs');
    const rss = () => Math.round(Number(/VmRSS:\\s+(\\d+)/.exec(fs.readFileSync('/proc/self/status', 'utf8'))[1]) / 1024);
    const node = rss();
    require(${JSON.stringify(client)}).PgliteThreadClient.open(${JSON.stringify(dataDir)}).then(async (db) => {
      await db.query('SELECT count(*) FROM forge_migrations');
      console.log(JSON.stringify({ node, opened: rss() }));
      await db.close();
    });`;
  const out = spawnSync(process.execPath, ['-e', script], { encoding: 'utf8' });
  if (out.status !== 0) throw new Error(`opening the database alone failed: ${out.stderr}`);
  return JSON.parse(out.stdout.trim().split('\n').pop()!) as { node: number; opened: number };
}
