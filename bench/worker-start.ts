import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { loadConfig } from '../src/config';
import { createToolStore, openDatabase } from '../src/db';
import { startDevServer } from '../src/platform/dev-server';
import { findFreePort } from '../src/process/free-port';
import { materializeActiveTools } from '../src/registry/materialize';
import { celsiusTool, seedActiveTools } from './reverify-seed';
import { percentile, round, statsRow } from './stats';
import type { Bench } from './types';

const RUNS = Number(process.env.BENCH_START_RUNS ?? 8);
const SMALL = 10;
const LARGE = Number(process.env.BENCH_START_TOOLS ?? 5_000);

/** A FORGE_HOME (embedded PGlite) holding `count` active tools, stored as deployments' commits store them, and their files. */
async function seededHome(base: string, count: number): Promise<string> {
  const home = mkdtempSync(path.join(base, `forge-bench-start-${count}-`));
  const config = loadConfig({ FORGE_HOME: home, FORGE_AGENT_TOOLS_DIR: path.join(home, 'agent-tools') });
  const database = await openDatabase(config);
  try {
    const store = createToolStore(database);
    await seedActiveTools(
      store,
      Array.from({ length: count }, (_, i) => celsiusTool(`seeded_${String(i).padStart(5, '0')}`)),
    );
    await materializeActiveTools(store, config.agentToolsDir);
  } finally {
    await database.close();
  }
  return home;
}

/** `forge worker` on `home`, from its spawn to "Forge workers are running"; then stopped (SIGTERM) before it resolves. */
async function timeWorkerStart(home: string, address: string, queue: string): Promise<number> {
  const env = {
    PATH: process.env.PATH,
    FORGE_HOME: home,
    FORGE_AGENT_TOOLS_DIR: path.join(home, 'agent-tools'),
    TEMPORAL_ADDRESS: address,
    FORGE_REVERIFY_INTERVAL: 'off',
    FORGE_TASK_QUEUE_CONTROL: `${queue}-control`,
    FORGE_TASK_QUEUE_SANDBOX: `${queue}-sandbox`,
    FORGE_TASK_QUEUE_PROMOTE: `${queue}-promote`,
  };
  const started = performance.now();
  const child = spawn(process.execPath, [path.join(__dirname, '..', '..', 'bin', 'forge.js'), 'worker'], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  const exited = new Promise((r) => child.once('exit', r));
  let output = '';
  const ms = await new Promise<number>((resolve, reject) => {
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      if (output.includes('Forge workers are running')) resolve(performance.now() - started);
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.once('exit', (code) => reject(new Error(`forge worker exited (${code}) before it was ready:\n${output}`)));
  });
  child.kill('SIGTERM');
  await exited;
  return ms;
}

/**
 * Issue 28: a restarted worker's start (spawn of `forge worker` → polling) with 10 and with 5,000 active tools, the
 * starts interleaved. A worker materialises agent-tools/ and makes FORGE_HOME private before it polls, and both once
 * touched every tool (a start at 5,000 tools took 30-50 s); recovery after a crash waits for it.
 */
export const workerStartBench: Bench = {
  name: 'worker-start',
  description: `forge worker's start (spawn → polling) with ${SMALL} and with ${LARGE} active tools, interleaved (${RUNS} starts each)`,
  async run() {
    const base = existsSync('/dev/shm') ? '/dev/shm' : tmpdir();
    const work = mkdtempSync(path.join(base, 'forge-bench-worker-start-'));
    const [port, uiPort] = [await findFreePort(), await findFreePort()];
    const server = await startDevServer({ home: work, port, uiPort });
    try {
      const sides: { count: number; home: string; ms: number[] }[] = [];
      for (const count of [SMALL, LARGE]) {
        const seeding = performance.now();
        sides.push({ count, home: await seededHome(work, count), ms: [] });
        console.log(`${count} tools: seeded and materialised in ${round((performance.now() - seeding) / 1000, 1)} s`);
      }
      // The first start of each home is not counted (it migrates nothing, but its files are cold).
      for (const side of sides) await timeWorkerStart(side.home, server.address, `bench-start-${side.count}`);
      for (let i = 0; i < RUNS; i++) {
        for (const side of i % 2 === 0 ? sides : [...sides].reverse())
          side.ms.push(await timeWorkerStart(side.home, server.address, `bench-start-${side.count}`));
      }
      for (const side of sides) console.log(statsRow(`  forge worker start, ${side.count} tools`, side.ms, 34));
      const [small, large] = sides.map((s) => percentile(s.ms, 50));
      const ratio = round(large / small);
      console.log(`worker start p50 at ${LARGE} / at ${SMALL} tools: ${ratio}`);
      return {
        worker_start_at_5000_tools_vs_at_10: ratio,
        worker_start_p50_at_10_tools_ms: round(small, 1),
        worker_start_p50_at_5000_tools_ms: round(large, 1),
      };
    } finally {
      await server.stop();
      rmSync(work, { recursive: true, force: true });
    }
  },
};
