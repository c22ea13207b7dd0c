import { writeFileSync } from 'node:fs';
import { useTemporal } from '../helpers/platform';
import { brokenCell, judgeCell, runScenario, type CellReport, type RunRecord } from './matrix/cell';
import { stopPayNetwork } from './matrix/pay';
import { removeReverifyPackage } from './matrix/reverify';
import { SCENARIOS } from './matrix/scenarios';

/**
 * The fault-injection matrix (issue 9, RELIABILITY.md): for every workflow and every fault point of it, the real
 * `forge worker` SIGKILLs itself there (FORGE_FAULT_KILL_AT), or the harness SIGKILLs it from outside (a promotion's
 * stage running), a fresh worker is started at once, and the run's result and end state (rows, events, migrations,
 * agent tables, agent-tools/ on disk, a promotion's repository, sandbox processes and directories, worktrees and run
 * branches) must equal an uninterrupted run of the same input.
 *
 * Run alone (`npm run jest -- test/chaos/matrix.test.ts`) it runs one cell per workflow (the kill right after its side
 * effect committed); `npm run test:chaos` (FORGE_CHAOS_MATRIX=full, .ci/run's chaos step) runs them all and prints the
 * matrix from the report this file writes (FORGE_CHAOS_REPORT). `npm test` leaves it out (test/long-suites.json).
 */
const full = process.env.FORGE_CHAOS_MATRIX === 'full';
const inSlice = sliceFilter(process.env.FORGE_CHAOS_SLICE);
const temporal = useTemporal();
const reports: CellReport[] = [];

afterAll(async () => {
  await removeReverifyPackage();
  await stopPayNetwork();
  if (process.env.FORGE_CHAOS_REPORT) writeFileSync(process.env.FORGE_CHAOS_REPORT, JSON.stringify(reports, null, 2));
});

/** Every cell in a fixed order, numbered, so a slice names the same cells on every machine. */
const CELLS = SCENARIOS.flatMap((scenario) => (full ? scenario.points : scenario.fastPoint ? [scenario.fastPoint] : []).map((point) => ({ scenario, point })));
const selected = CELLS.filter((_, i) => inSlice(i));

/** FORGE_CHAOS_SLICE: `k/n` keeps every n-th cell from the k-th (1-based); `date` takes k from today's date. */
function sliceFilter(spec: string | undefined): (index: number) => boolean {
  if (!spec) return () => true;
  const m = /^(\d+|date)\/(\d+)$/.exec(spec);
  if (!m || Number(m[2]) < 1) throw new Error(`FORGE_CHAOS_SLICE=${spec}: write k/n (1 <= k <= n) or date/n`);
  const n = Number(m[2]);
  const k = m[1] === 'date' ? (Math.floor(Date.now() / 86_400_000) % n) + 1 : Number(m[1]);
  if (k < 1 || k > n) throw new Error(`FORGE_CHAOS_SLICE=${spec}: k must be between 1 and ${n}`);
  return (index) => index % n === k - 1;
}

const scenariosInSlice = SCENARIOS.filter((s) => selected.some((c) => c.scenario === s));
describe.each(scenariosInSlice.map((s) => [s.workflowType, s] as const))('%s', (_type, scenario) => {
  let baseline: Promise<RunRecord> | undefined;
  const points = selected.filter((c) => c.scenario === scenario).map((c) => c.point);

  test.each(points)(
    `SIGKILL at %s, then a fresh worker: the same result and end state as an uninterrupted run (${scenario.label})`,
    async (point) => {
      baseline ??= runScenario(temporal(), scenario);
      let report: CellReport;
      try {
        const uninterrupted = await baseline;
        expect(uninterrupted.strays).toEqual([]);
        expect(uninterrupted.leftovers).toEqual([]);
        report = judgeCell(scenario, point, uninterrupted, await runScenario(temporal(), scenario, point));
      } catch (err) {
        report = brokenCell(scenario, point, err);
      }
      reports.push(report);
      if (!report.consistent) throw new Error(`not consistent: ${report.reason}`);
    },
    300_000,
  );
});
