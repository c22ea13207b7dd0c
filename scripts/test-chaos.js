#!/usr/bin/env node
'use strict';
/**
 * `npm run test:chaos`: the whole fault-injection matrix (RELIABILITY.md). Runs the chaos suites of test/chaos with
 * FORGE_CHAOS_MATRIX=full (every fault point of every workflow, and the load with faults), then prints the matrix —
 * workflow × fault point → consistent / not, with the reason — and the other chaos cells, and ends with the line
 * `N passed, N failed`. Exit status 0 only when every cell passed. Expects `npm run build` first (`npm run test:chaos`
 * does it): the cells run the real `forge worker` from dist/.
 *
 * FORGE_CHAOS_SLICE=k/n runs every n-th matrix cell from the k-th (1-based) only; FORGE_CHAOS_SLICE=date picks k from
 * today's date, so a CI that cannot afford the whole matrix covers it over n days. Unset: the whole matrix.
 * Arguments, when given, are the test paths to run instead of all of test/chaos. FORGE_TEST_SET=chaos narrows it to
 * the files test/long-suites.json lists under "chaos" (the matrix, a sale's, an online index build's and the load):
 * .ci/run runs that, after `npm test` and `npm run test:long` have run every other file, chaos cells included.
 */
const { spawnSync } = require('node:child_process');
const { existsSync, mkdtempSync, readFileSync, rmSync } = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const root = path.join(__dirname, '..');
const work = mkdtempSync(path.join(os.tmpdir(), 'forge-chaos-'));
const matrixReport = path.join(work, 'matrix.json');
const jestReport = path.join(work, 'jest.json');

const env = { ...process.env, FORGE_CHAOS_MATRIX: 'full', FORGE_CHAOS_REPORT: matrixReport };
if (process.env.FORGE_CHAOS_SLICE) process.stdout.write(`chaos: slice ${process.env.FORGE_CHAOS_SLICE} of the matrix\n`);
const jest = spawnSync(
  process.execPath,
  [
    '--experimental-vm-modules',
    '--disable-warning=ExperimentalWarning',
    path.join(root, 'node_modules', 'jest', 'bin', 'jest.js'),
    ...(process.argv.length > 2 ? process.argv.slice(2) : ['test/chaos']),
    // One file at a time: the matrix times each recovery (spawn of the fresh worker to the end of its run), and with
    // jest's second worker the other chaos files (the load with faults: 50 deployments and two kills; the sale's and the
    // online index's kills) ran beside its first ~5 minutes, on the same 2 cores, where its deployment cells are: six
    // of those took 1.8–5.2 s longer than in a run alone (CI of 04ef51a and of bf4b6a5, 2026-11-29). ~4.5 min more.
    '--runInBand',
    '--json',
    `--outputFile=${jestReport}`,
  ],
  { cwd: root, env, stdio: 'inherit' },
);

const cells = existsSync(matrixReport) ? JSON.parse(readFileSync(matrixReport, 'utf8')) : [];
const suites = existsSync(jestReport) ? JSON.parse(readFileSync(jestReport, 'utf8')).testResults : [];
rmSync(work, { recursive: true, force: true });

const lines = ['', 'Fault-injection matrix (SIGKILL of forge worker at the point, then a fresh worker):', ''];
const width = Math.max(...cells.map((c) => c.workflowType.length), 10);
const pointWidth = Math.max(...cells.map((c) => c.point.length), 10);
for (const c of cells) {
  const verdict = c.consistent ? 'consistent' : `NOT consistent: ${c.reason}`;
  const start = c.readyToEndMs !== undefined ? ` (worker start ${c.recoveryMs - c.readyToEndMs})` : '';
  const recovery = c.recoveryMs !== undefined ? `  recovery ${c.recoveryMs} ms${start}, cost ${c.costMs} ms` : '';
  lines.push(`  ${c.workflowType.padEnd(width)}  ${c.point.padEnd(pointWidth)}  ${verdict}${recovery}`);
}
// Issue 9's figure: p50 over every cell of the matrix. Beside it the promotion cells apart, whose recovery also counts
// the stages still to run (seconds of tsc and jest), and the tool and migration cells.
const p50 = (list) => [...list].sort((a, b) => a - b)[Math.floor((list.length - 1) / 2)];
const timedCells = cells.filter((c) => c.recoveryMs !== undefined);
const allRecoveries = timedCells.map((c) => c.recoveryMs);
const runRecoveries = timedCells.filter((c) => c.workflowType !== 'promoteBuiltinWorkflow').map((c) => c.recoveryMs);
const promotionRecoveries = timedCells.filter((c) => c.workflowType === 'promoteBuiltinWorkflow').map((c) => c.recoveryMs);
if (allRecoveries.length > 0) {
  lines.push('', `recovery_after_worker_kill_p50_ms: ${p50(allRecoveries)} (over ${allRecoveries.length} cells; goal <= 3000)`);
}
if (runRecoveries.length > 0) lines.push(`  every cell but the promotions': ${p50(runRecoveries)} (over ${runRecoveries.length})`);
// Where it goes: the restarted worker's start (spawn to "workers are running") and the run's end after it.
const split = timedCells.filter((c) => c.readyToEndMs !== undefined);
if (split.length > 0) {
  lines.push(
    `  of which the restarted worker's start p50 ${p50(split.map((c) => c.recoveryMs - c.readyToEndMs))}, and its ready to the run's end p50 ${p50(split.map((c) => c.readyToEndMs))} (over ${split.length})`,
  );
}
// What a kill cost each run: its start-to-result time over the uninterrupted run's (the waits, and work done again),
// without the steps still to run that the recovery time above also counts.
const costs = timedCells.map((c) => c.costMs).filter((v) => typeof v === 'number');
if (costs.length > 0) lines.push(`recovery_cost_p50_ms: ${p50(costs)} (the run's time over the uninterrupted run's, over ${costs.length} cells)`);
if (promotionRecoveries.length > 0) {
  lines.push(
    `  promotion_recovery_after_worker_kill_p50_ms: ${p50(promotionRecoveries)} (over ${promotionRecoveries.length}; the stages still to run included)`,
  );
}

// The other chaos cells (outages, cancellation, ...) are their own jest tests: one line each.
const others = [];
for (const suite of suites) {
  if (suite.name.endsWith(path.join('chaos', 'matrix.test.ts'))) continue;
  for (const t of suite.assertionResults) {
    if (t.status === 'pending') continue;
    others.push({
      name: `${path.basename(suite.name, '.test.ts')}: ${t.title}`,
      passed: t.status === 'passed',
      reason: t.failureMessages?.[0]?.split('\n')[0],
    });
  }
  if (suite.assertionResults.length === 0 && suite.status === 'failed') {
    others.push({ name: path.basename(suite.name), passed: false, reason: (suite.message || '').split('\n').find(Boolean) });
  }
}
if (others.length > 0) {
  lines.push('', 'Other chaos cells:', '');
  for (const o of others) lines.push(`  ${o.passed ? 'consistent' : 'NOT consistent'}  ${o.name}${o.passed ? '' : ` — ${o.reason}`}`);
}

const passed = cells.filter((c) => c.consistent).length + others.filter((o) => o.passed).length;
const failed = cells.length - cells.filter((c) => c.consistent).length + others.filter((o) => !o.passed).length;
const broken = jest.status !== 0 && failed === 0 ? 1 : 0; // jest failed outside any cell (a suite that did not load)
lines.push('', `${passed} passed, ${failed + broken} failed`);
process.stdout.write(lines.join('\n') + '\n');
process.exit(failed + broken === 0 ? 0 : 1);
