import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { findFreePort } from '../src/process/free-port';
import { round } from './stats';
import type { Bench } from './types';

/** The repository root, from dist/bench/ (compiled) or bench/ (sources). */
const ROOT = [path.join(__dirname, '..', '..'), path.join(__dirname, '..')].find(
  (d) => existsSync(path.join(d, 'package.json')) && existsSync(path.join(d, 'scripts', 'build.js')),
)!;

/**
 * A clone of the repository's committed HEAD, with its node_modules: the checkout `npm start` runs in. Not the
 * repository itself, whose tree others may be editing while the bench runs (a changed file is a compile, not a warm
 * start); and a clone has no dist/ and no .forge/, so its first start is a first start in full.
 */
function cloneCheckout(into: string): string {
  const checkout = path.join(into, 'checkout');
  const cloned = spawnSync('git', ['clone', '--quiet', ROOT, checkout], { encoding: 'utf8' });
  if (cloned.status !== 0) throw new Error(`git clone ${ROOT} failed: ${cloned.stderr}`);
  symlinkSync(path.join(ROOT, 'node_modules'), path.join(checkout, 'node_modules'), 'dir');
  return checkout;
}

/** How long one start may take before the bench gives up on it (a first build on a loaded machine: minutes). */
const START_TIMEOUT_MS = 10 * 60_000;

interface Started {
  /** Seconds from `npm start` to forge up's "Forge is up." on stdout. */
  readyS: number;
  /** The build step's lines ([build] ...), to tell a start that compiled from one that did not. */
  buildLines: string[];
  stop(): Promise<void>;
}

/** Whether any process of the group `pgid` is still alive. */
function groupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
    return true;
  } catch {
    return false;
  }
}

/**
 * `npm start` in the repository, as a user types it, in a process group of its own; resolves once forge up says it is
 * ready. stop() sends SIGTERM to the group (npm, its shell, forge up, which stops its dev server and workers) and waits
 * for it to be gone, SIGKILL after 30 s.
 */
async function npmStart(checkout: string, env: NodeJS.ProcessEnv): Promise<Started> {
  const started = performance.now();
  const child = spawn('npm', ['start'], { cwd: checkout, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  const pgid = child.pid!;
  let stdout = '';
  let stderr = '';
  const readyS = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`npm start was not ready in ${START_TIMEOUT_MS / 1000} s:\n${stdout}\n${stderr.slice(-3000)}`)),
      START_TIMEOUT_MS,
    );
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      stdout += chunk;
      if (stdout.includes('Forge is up.')) {
        clearTimeout(timer);
        resolve((performance.now() - started) / 1000);
      }
    });
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`npm start exited (${code}) before it was ready:\n${stdout}\n${stderr.slice(-3000)}`));
    });
  });
  child.removeAllListeners('exit');
  return {
    readyS,
    buildLines: stderr.split('\n').filter((l) => l.startsWith('[build]')),
    async stop() {
      try {
        process.kill(-pgid, 'SIGTERM');
      } catch {
        return; // already gone
      }
      const deadline = performance.now() + 30_000;
      while (groupAlive(pgid) && performance.now() < deadline) await new Promise((r) => setTimeout(r, 200));
      if (groupAlive(pgid)) {
        try {
          process.kill(-pgid, 'SIGKILL');
        } catch {
          // gone in between
        }
      }
    },
  };
}

/**
 * Issue 25, point 7: `npm start` rebuilt everything at each start (12–82 s of silence). start_warm_s is a second
 * `npm start` on an unchanged tree (a clone of HEAD) with a FORGE_HOME the first start set up (the temporal CLI it
 * installed there, PGlite's data, the dev server's SQLite file, the agent repository), from the command to forge up's
 * "Forge is up." line: setup's fast path, the build step finding nothing to do, and forge up's own start (dev server,
 * database, workers). start_first_s, the first start (the full build, the temporal CLI's install, a new home), for
 * comparison.
 */
export const startBench: Bench = {
  name: 'start',
  description: 'npm start on an unchanged tree, to forge up ready: first start on a fresh FORGE_HOME, then a warm one',
  async run() {
    const work = mkdtempSync(path.join(existsSync('/dev/shm') ? '/dev/shm' : tmpdir(), 'forge-bench-start-'));
    // Readable by the sandbox's own users (forge up's spares, run as one of them when root, load agent-tools/ there).
    chmodSync(work, 0o755);
    try {
      const checkout = cloneCheckout(work);
      const home = path.join(work, 'home');
      mkdirSync(home);
      const env: NodeJS.ProcessEnv = {
        ...process.env,
        FORGE_HOME: home,
        FORGE_AGENT_TOOLS_DIR: path.join(home, 'agent-tools'),
        FORGE_TEMPORAL_PORT: String(await findFreePort()),
        FORGE_UI_PORT: String(await findFreePort()),
        FORGE_METRICS_ADDRESS: `127.0.0.1:${await findFreePort()}`,
        // Only what the checkout itself runs: not npm's variables from `npm run bench` (npm_lifecycle_event, ...).
        ...Object.fromEntries(
          Object.keys(process.env)
            .filter((k) => k.startsWith('npm_'))
            .map((k) => [k, undefined]),
        ),
      };
      for (const name of ['TEMPORAL_ADDRESS', 'DATABASE_URL']) delete env[name];
      for (const [k, v] of Object.entries(env)) if (v === undefined) delete env[k];

      const first = await npmStart(checkout, env);
      await first.stop();
      process.stdout.write(`first start (clone of HEAD, fresh FORGE_HOME): ready in ${round(first.readyS)} s\n  ${first.buildLines.join('\n  ')}\n`);
      const warm = await npmStart(checkout, env);
      await warm.stop();
      process.stdout.write(`warm start: ready in ${round(warm.readyS)} s\n  ${warm.buildLines.join('\n  ')}\n`);
      if (!warm.buildLines.some((l) => l.includes('is up to date'))) throw new Error('the warm start built something: the clone changed between the starts');
      process.stdout.write(`start_warm_s: ${round(warm.readyS)} s  (goal < 15 s)\n`);
      return { start_warm_s: round(warm.readyS), start_first_s: round(first.readyS) };
    } finally {
      rmSync(work, { recursive: true, force: true });
    }
  },
};
