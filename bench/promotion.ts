import { cp, mkdir, mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { PROMOTE_STEPS, PROMOTION_STAGES, type PromoteBuiltinResult, type PromotionStage } from '../src/contract/promotion-runs';
import { planStages, readVerifyPlan } from '../src/git';
import { packageRoot } from '../src/sandbox/paths';
import { startPlatformProcess } from './platform';
import { bareStage, git, scratchParent, snake } from './promotion-worktree';
import { percentile, processTreeCpuMs, round, statsRow, timeMs } from './stats';
import type { Bench } from './types';

const RUNS = Number(process.env.BENCH_PROMOTE_RUNS ?? 7);
const CHANGED = 'src/tools/sum.ts';

/**
 * A promotion end to end through the real platform (issue 11): `forge up` in its own process (dev server, database,
 * workers), this process a client; each run starts PromoteBuiltinWorkflow on a fresh copy of examples/agent-repo
 * (on tmpfs) with the same one-file change and waits for `promoted`. Against it, in the same run and alternating
 * which goes first: the bare sum of the stage commands the plan gives for that change, spawned by hand one after the
 * other in a fresh worktree of another fresh copy (made by hand with plain git, untimed), with the environment
 * runStage gives (a fresh HOME and TMPDIR each, so neither side has a warm jest cache). The ratio of the p50s is
 * `promote_vs_bare_stages_p50`; each step of the durable runs (from the result's `steps`) says where the rest goes.
 */
export const promotionBench: Bench = {
  name: 'promotion',
  description: `promotion end to end (client → promoted) vs the bare stage commands by hand (${RUNS} runs each)`,
  async run() {
    const scratch = await mkdtemp(path.join(scratchParent(), 'forge-bench-promote-'));
    const { forge, pid, stop } = await startPlatformProcess('promotion');
    try {
      const original = await readFile(path.join(packageRoot(), 'examples', 'agent-repo', CHANGED), 'utf8');
      const content = original.replace('Adds finite numbers', 'Adds finite numbers, left to right');
      if (content === original) throw new Error(`the bench's change no longer applies to ${CHANGED}`);
      const change = { path: CHANGED, content };
      let n = 0;

      const durable = async () => {
        const repo = await freshRepo(path.join(scratch, `durable-${n++}`));
        let result: PromoteBuiltinResult | undefined;
        const cpuBefore = platformCpuMs(pid);
        const ms = await timeMs(async () => {
          result = await forge.promoteBuiltin({ repo, changes: [change], message: 'sum: say the order' });
        });
        const cpuMs = platformCpuMs(pid) - cpuBefore;
        if (result?.status !== 'promoted') throw new Error(`promotion: ${result?.status}: ${result?.message}`);
        await rm(path.dirname(repo), { recursive: true, force: true });
        return { ms, result, cpuMs };
      };

      const bare = async () => {
        const dir = path.join(scratch, `bare-${n++}`);
        const repo = await freshRepo(dir);
        // By hand: a detached worktree, the packages linked in, the change written and committed.
        const worktree = path.join(dir, 'worktree');
        await git(repo, 'worktree', 'add', '--detach', '--quiet', worktree, 'HEAD');
        await symlink(path.join(packageRoot(), 'node_modules'), path.join(worktree, 'node_modules'), 'dir');
        await writeFile(path.join(worktree, CHANGED), content);
        await git(worktree, 'commit', '-q', '-am', 'sum: say the order');
        const stages = planStages(await readVerifyPlan(repo, await git(repo, 'rev-parse', 'HEAD')), [CHANGED]);
        const tmp = path.join(dir, 'tmp');
        await mkdir(tmp);
        const perStage = {} as Record<PromotionStage, number>;
        let total = 0;
        for (const stage of stages) {
          const ms = await timeMs(() => bareStage(stage, worktree, tmp));
          perStage[stage.name] = ms;
          total += ms;
        }
        await rm(dir, { recursive: true, force: true });
        return { ms: total, perStage };
      };

      // Warm-up: the page cache, the workers' first activities, the bundle's first workflow task.
      await durable();
      await bare();
      const totals = { durable: [] as number[], bare: [] as number[] };
      const steps: Record<string, number[]> = Object.fromEntries(PROMOTE_STEPS.map((s) => [s, []]));
      const reported: Record<string, number[]> = Object.fromEntries(PROMOTION_STAGES.map((s) => [s, []]));
      const bareStages: Record<string, number[]> = Object.fromEntries(PROMOTION_STAGES.map((s) => [s, []]));
      const outside: number[] = [];
      const platformCpu: number[] = [];
      const recordDurable = ({ ms, result, cpuMs }: Awaited<ReturnType<typeof durable>>) => {
        totals.durable.push(ms);
        platformCpu.push(cpuMs);
        let inSteps = 0;
        for (const s of result.steps) {
          steps[s.name].push(s.durationMs ?? 0);
          inSteps += s.durationMs ?? 0;
        }
        for (const s of result.diagnostics.stages) reported[s.name].push(s.durationMs);
        outside.push(ms - inSteps);
      };
      const recordBare = ({ ms, perStage }: Awaited<ReturnType<typeof bare>>) => {
        totals.bare.push(ms);
        for (const [name, t] of Object.entries(perStage)) bareStages[name].push(t);
      };
      for (let i = 0; i < RUNS; i++) {
        if (i % 2 === 0) {
          recordBare(await bare());
          recordDurable(await durable());
        } else {
          recordDurable(await durable());
          recordBare(await bare());
        }
      }

      const figures: Record<string, number> = {};
      console.log(statsRow('bare stage commands, by hand', totals.bare, 40));
      console.log(statsRow('promotion, client → promoted', totals.durable, 40));
      console.log('each step of the durable run (workflow clock, from the result):');
      for (const s of PROMOTE_STEPS) {
        console.log(statsRow(`  ${s}`, steps[s], 40));
        figures[`promote_step_${snake(s)}_p50_ms`] = round(percentile(steps[s], 50), 1);
      }
      console.log(statsRow('  outside the steps (start, result)', outside, 40));
      figures.promote_outside_steps_p50_ms = round(percentile(outside, 50), 1);
      console.log('each stage: runStage inside the activity / the bare commands:');
      for (const s of PROMOTION_STAGES) {
        console.log(statsRow(`  ${s}, runStage (report)`, reported[s], 40));
        console.log(statsRow(`  ${s}, bare`, bareStages[s], 40));
        figures[`promote_stage_${snake(s)}_bare_p50_ms`] = round(percentile(bareStages[s], 50), 1);
      }
      console.log(statsRow('platform CPU (forge up + dev server)', platformCpu, 40));
      figures.promote_platform_cpu_p50_ms = round(percentile(platformCpu, 50), 1);
      const ratio = round(percentile(totals.durable, 50) / percentile(totals.bare, 50));
      console.log(`promotion / bare stage commands (p50): ${ratio}×  (goal ≤ 1.2×)`);
      return {
        promote_vs_bare_stages_p50: ratio,
        promote_p50_ms: round(percentile(totals.durable, 50), 1),
        promote_bare_stages_p50_ms: round(percentile(totals.bare, 50), 1),
        ...figures,
      };
    } finally {
      await stop();
      await rm(scratch, { recursive: true, force: true });
    }
  },
};

/** A fresh copy of examples/agent-repo under `dir`: one commit on main, Forge's node_modules linked in as `forge up` seeds one. */
async function freshRepo(dir: string): Promise<string> {
  const repo = path.join(dir, 'repo');
  await cp(path.join(packageRoot(), 'examples', 'agent-repo'), repo, { recursive: true, filter: (src) => !/[/\\](node_modules|dist)$/.test(src) });
  await git(repo, 'init', '-q');
  await git(repo, 'add', '-A');
  await git(repo, 'commit', '-q', '-m', 'The example agent');
  await symlink(path.join(packageRoot(), 'node_modules'), path.join(repo, 'node_modules'), 'dir');
  return repo;
}

/**
 * CPU time (user + system, ms) used so far by the `forge up` process itself and by the Temporal dev server it started:
 * the platform's own work, which competes with the stages for the cores. The stages' processes are not counted.
 */
function platformCpuMs(pid: number): number {
  const split = processTreeCpuMs(pid);
  return split.self + (split.temporal ?? 0);
}
