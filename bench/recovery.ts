import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { percentile, round, statsRow } from './stats';
import type { Bench } from './types';

/** The repository root, from dist/bench/ (compiled) or bench/ (sources). */
const ROOT = [path.join(__dirname, '..', '..'), path.join(__dirname, '..')].find((d) => existsSync(path.join(d, 'test', 'chaos', 'matrix.test.ts')))!;
const GOAL_MS = 3_000;

interface Cell {
  workflowType: string;
  point: string;
  consistent: boolean;
  recoveryMs?: number;
  readyToEndMs?: number;
  costMs?: number;
}

/**
 * Issue 9: recovery after a worker is killed, measured on the fault-injection matrix itself (one mechanism: the
 * cells of `npm run test:chaos`). For each cell, the time from spawning a fresh `forge worker` to the end of the run
 * the killed worker held, p50 over every cell; beside it the share of that spent starting the worker.
 */
export const recoveryBench: Bench = {
  name: 'recovery',
  description: 'fresh worker spawned → the killed worker’s run ended, over every cell of the chaos matrix',
  async run() {
    const work = mkdtempSync(path.join(tmpdir(), 'forge-bench-recovery-'));
    const report = path.join(work, 'matrix.json');
    try {
      const jest = spawnSync(
        process.execPath,
        [
          '--experimental-vm-modules',
          '--disable-warning=ExperimentalWarning',
          path.join(ROOT, 'node_modules', 'jest', 'bin', 'jest.js'),
          'test/chaos/matrix.test.ts',
          '--silent',
        ],
        { cwd: ROOT, env: { ...process.env, FORGE_CHAOS_MATRIX: 'full', FORGE_CHAOS_REPORT: report }, stdio: ['ignore', 'ignore', 'pipe'], encoding: 'utf8' },
      );
      if (!existsSync(report)) throw new Error(`the chaos matrix wrote no report (jest exit ${jest.status}):\n${jest.stderr.slice(-3000)}`);
      const cells = JSON.parse(readFileSync(report, 'utf8')) as Cell[];
      // Issue 9's figure: every cell. A promotion cell also counts the stages still to run (seconds of tsc and jest),
      // so the promotion cells are also a figure of their own.
      const timed = cells.filter((c) => c.recoveryMs !== undefined && c.readyToEndMs !== undefined);
      const promotion = timed.filter((c) => c.workflowType === 'promoteBuiltinWorkflow').map((c) => c.recoveryMs!);
      const recovery = timed.map((c) => c.recoveryMs!);
      const start = timed.map((c) => c.recoveryMs! - c.readyToEndMs!);
      const afterReady = timed.map((c) => c.readyToEndMs!);
      process.stdout.write(`${cells.filter((c) => c.consistent).length} of ${cells.length} cells consistent\n`);
      process.stdout.write(
        `${statsRow('spawn → run ended', recovery)}\n${statsRow('  of it: worker start', start)}\n${statsRow('  of it: ready → run ended', afterReady)}\n`,
      );
      const p50 = percentile(recovery, 50);
      process.stdout.write(`recovery p50 / goal (${GOAL_MS} ms): ${round(p50 / GOAL_MS)}\n`);
      return {
        recovery_after_worker_kill_p50_ms: round(p50, 0),
        recovery_after_worker_kill_p95_ms: round(percentile(recovery, 95), 0),
        recovery_worker_start_p50_ms: round(percentile(start, 50), 0),
        recovery_vs_goal_p50: round(p50 / GOAL_MS),
        // What the kill cost each run over its uninterrupted twin (waits and work redone; not the steps still to run).
        recovery_cost_p50_ms: round(
          percentile(
            timed.map((c) => c.costMs ?? 0),
            50,
          ),
          0,
        ),
        ...(promotion.length > 0 ? { promotion_recovery_after_worker_kill_p50_ms: round(percentile(promotion, 50), 0) } : {}),
      };
    } finally {
      rmSync(work, { recursive: true, force: true });
    }
  },
};
