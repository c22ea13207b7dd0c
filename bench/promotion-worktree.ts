import { execFile, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { accessSync, constants } from 'node:fs';
import { cp, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import type { PromotionStage } from '../src/contract/promotion-runs';
import {
  cleanupRun,
  commitChange,
  compareAndSwapBranch,
  createWorktree,
  linkNodeModules,
  planStages,
  readVerifyPlan,
  resolveBranchCommit,
  type PlannedStage,
} from '../src/git';
import { packageRoot } from '../src/sandbox/paths';
import { runStage, type StageDefaults } from '../src/sandbox/run-stage';
import { percentile, round, statsRow, timeMs } from './stats';
import type { Bench } from './types';

const run = promisify(execFile);
const WORKTREE_RUNS = Number(process.env.BENCH_WORKTREE_RUNS ?? 15);
const STEP_RUNS = Number(process.env.BENCH_STEP_RUNS ?? 9);
const STAGE_RUNS = Number(process.env.BENCH_STAGE_RUNS ?? 5);
const IDENTITY = { name: 'Forge', email: 'forge@localhost' };
const DEFAULTS: StageDefaults = { timeoutMs: 180_000, memoryMb: 2048, outputBytes: 4 * 1024 * 1024 };

/**
 * Promotion costs (issue 11). (1) `createWorktree` against bare `git worktree add --detach` on repositories of 1,000
 * and 10,000 files on tmpfs, interleaved (goal ≤ 1.2×). (2) Each git step of a promotion on the example repository.
 * (3) Each stage through `runStage` (contained, bounded) against the same argv spawned by hand, with the same
 * environment and a fresh TMPDIR/HOME each (so neither side has a warm jest cache), in fresh worktrees, alternating
 * which goes first (`stages_vs_bare_p50`).
 */
export const promotionWorktreeBench: Bench = {
  name: 'promotion-worktree',
  description: `promotion: worktree vs git (${WORKTREE_RUNS} runs), git steps (${STEP_RUNS}), stages vs bare (${STAGE_RUNS})`,
  async run() {
    const scratch = await mkdtemp(path.join(scratchParent(), 'forge-bench-promotion-'));
    try {
      const figures: Record<string, number> = {};
      for (const [label, files] of [
        ['1k', 1_000],
        ['10k', 10_000],
      ] as const) {
        Object.assign(figures, await worktreeVsGit(path.join(scratch, `wt-${label}`), label, files));
      }
      Object.assign(figures, await gitSteps(path.join(scratch, 'steps')));
      Object.assign(figures, await stagesVsBare(path.join(scratch, 'stages')));
      return figures;
    } finally {
      await rm(scratch, { recursive: true, force: true });
    }
  },
};

/** tmpfs when writable (/dev/shm), else the OS temp directory. */
export function scratchParent(): string {
  try {
    accessSync('/dev/shm', constants.W_OK);
    return '/dev/shm';
  } catch {
    return tmpdir();
  }
}

/** git as a person runs it: no Forge wrapper, hooks off, a fixed identity. */
export async function git(cwd: string, ...args: string[]): Promise<string> {
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    GIT_AUTHOR_NAME: 'Bench',
    GIT_AUTHOR_EMAIL: 'bench@localhost',
    GIT_COMMITTER_NAME: 'Bench',
    GIT_COMMITTER_EMAIL: 'bench@localhost',
  };
  const { stdout } = await run('git', ['-c', 'init.defaultBranch=main', '-c', 'core.hooksPath=/dev/null', ...args], { cwd, env, maxBuffer: 64 * 1024 * 1024 });
  return stdout.trim();
}

/** A repository of `files` small files, 100 per directory, in one commit on main. */
async function syntheticRepo(repo: string, files: number): Promise<string> {
  await mkdir(repo, { recursive: true });
  for (let d = 0; d * 100 < files; d++) {
    const dir = path.join(repo, 'src', `m${d}`);
    await mkdir(dir, { recursive: true });
    const batch: Promise<void>[] = [];
    for (let f = d * 100; f < Math.min(files, (d + 1) * 100); f++) {
      batch.push(writeFile(path.join(dir, `f${f}.ts`), `export const v${f} = ${f};\n// ${randomBytes(24).toString('hex')}\n`));
    }
    await Promise.all(batch);
  }
  await git(repo, 'init', '-q');
  await git(repo, 'add', '-A');
  await git(repo, 'commit', '-q', '-m', `${files} files`);
  return git(repo, 'rev-parse', 'HEAD');
}

async function worktreeVsGit(dir: string, label: string, files: number): Promise<Record<string, number>> {
  const repo = path.join(dir, 'repo');
  const root = path.join(dir, 'worktrees');
  await mkdir(root, { recursive: true });
  const base = await syntheticRepo(repo, files);
  const bare: number[] = [];
  const forge: number[] = [];
  const bareOnce = async (i: number) => {
    const target = path.join(root, `bare-${i}`);
    const ms = await timeMs(() => run('git', ['worktree', 'add', '--detach', '--quiet', target, base], { cwd: repo }));
    await git(repo, 'worktree', 'remove', '--force', target);
    return ms;
  };
  const forgeOnce = async (i: number) => {
    const runId = `run-${label}-${i}`;
    const ms = await timeMs(() => createWorktree({ repo, runId, commit: base, root }));
    await cleanupRun({ repo, runId, root });
    return ms;
  };
  // Warm-up: the page cache, git's own first-run costs.
  await bareOnce(-1);
  await forgeOnce(-1);
  for (let i = 0; i < WORKTREE_RUNS; i++) {
    // Alternate which goes first, so a drift of the machine hits both alike.
    if (i % 2 === 0) {
      bare.push(await bareOnce(i));
      forge.push(await forgeOnce(i));
    } else {
      forge.push(await forgeOnce(i));
      bare.push(await bareOnce(i));
    }
  }
  const ratio = round(percentile(forge, 50) / percentile(bare, 50));
  console.log(statsRow(`git worktree add, ${label} files`, bare, 36));
  console.log(statsRow(`createWorktree, ${label} files`, forge, 36));
  console.log(`createWorktree / git worktree add, ${label} (p50): ${ratio}×  (goal ≤ 1.2×)`);
  return {
    [`worktree_vs_git_${label}_ratio`]: ratio,
    [`worktree_${label}_p50_ms`]: round(percentile(forge, 50), 1),
    [`git_worktree_add_${label}_p50_ms`]: round(percentile(bare, 50), 1),
  };
}

/** A fresh copy of examples/agent-repo, a git repository with one commit on main. */
async function exampleRepo(dir: string): Promise<{ repo: string; root: string; base: string }> {
  const repo = path.join(dir, 'repo');
  await cp(path.join(packageRoot(), 'examples', 'agent-repo'), repo, { recursive: true, filter: (src) => !/[/\\](node_modules|dist)$/.test(src) });
  await git(repo, 'init', '-q');
  await git(repo, 'add', '-A');
  await git(repo, 'commit', '-q', '-m', 'The example agent');
  return { repo, root: path.join(dir, 'worktrees'), base: await git(repo, 'rev-parse', 'HEAD') };
}

const nodeModules = () => path.join(packageRoot(), 'node_modules');

async function gitSteps(dir: string): Promise<Record<string, number>> {
  const { repo, root, base } = await exampleRepo(dir);
  const steps = ['createWorktree', 'linkNodeModules', 'commitChange', 'compareAndSwapBranch', 'cleanupRun'] as const;
  const samples: Record<(typeof steps)[number], number[]> = {
    createWorktree: [],
    linkNodeModules: [],
    commitChange: [],
    compareAndSwapBranch: [],
    cleanupRun: [],
  };
  for (let i = -1; i < STEP_RUNS; i++) {
    const runId = `steps-${i + 1}`;
    const branch = `bench/${i + 1}`; // a branch of its own for each run's compare-and-swap, at the base
    await git(repo, 'branch', branch, base);
    const files = [{ path: 'src/tools/sum.ts', content: `// bench run ${i}\n` }];
    const t: Partial<Record<(typeof steps)[number], number>> = {};
    let worktree = '';
    let tested = '';
    t.createWorktree = await timeMs(async () => {
      worktree = (await createWorktree({ repo, runId, commit: base, root })).path;
    });
    t.linkNodeModules = await timeMs(() => linkNodeModules({ repo, worktree, changedPaths: files.map((f) => f.path), nodeModules: nodeModules() }));
    t.commitChange = await timeMs(async () => {
      tested = (await commitChange({ repo, runId, worktree, base, files, message: 'bench', identity: IDENTITY, date: Date.UTC(2026, 10, 24) })).commit;
    });
    t.compareAndSwapBranch = await timeMs(async () => {
      const swap = await compareAndSwapBranch({ repo, branch, base, tested });
      if (swap.status !== 'merged') throw new Error(`compare-and-swap: ${swap.status}`);
    });
    t.cleanupRun = await timeMs(() => cleanupRun({ repo, runId, root }));
    if (i < 0) continue; // warm-up
    for (const s of steps) samples[s].push(t[s]!);
  }
  const figures: Record<string, number> = {};
  let total = 0;
  for (const s of steps) {
    console.log(statsRow(`step ${s}`, samples[s], 36));
    const p50 = round(percentile(samples[s], 50), 1);
    figures[`promotion_step_${snake(s)}_p50_ms`] = p50;
    total += p50;
  }
  console.log(`git steps of one promotion, sum of p50s: ${round(total, 1)} ms`);
  figures.promotion_git_steps_p50_ms = round(total, 1);
  return figures;
}

export const snake = (s: string) => s.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);

/** The same environment runStage gives a command (see run-stage.ts), with a fresh HOME and TMPDIR. */
async function bareEnv(scratch: string): Promise<Record<string, string>> {
  const home = await mkdtemp(path.join(scratch, 'bare-'));
  return { PATH: `${path.dirname(process.execPath)}:/usr/local/bin:/usr/bin:/bin`, HOME: home, TMPDIR: home, CI: 'true', NODE_ENV: 'test' };
}

/** The stage's argv spawned by hand in the worktree: no containment, no limits; throws unless every command exits 0. */
export async function bareStage(stage: PlannedStage, worktree: string, scratch: string): Promise<void> {
  for (const command of stage.commands) {
    const env = await bareEnv(scratch);
    const code = await new Promise<number | null>((resolve, reject) => {
      const child = spawn(command.argv[0] === 'node' ? process.execPath : command.argv[0], command.argv.slice(1), {
        cwd: worktree,
        env,
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      child.stdout.resume();
      child.stderr.resume();
      child.on('error', reject);
      child.on('close', (c) => resolve(c));
    });
    await rm(env.HOME, { recursive: true, force: true });
    if (code !== 0) throw new Error(`bare ${command.argv.join(' ')} exited ${code}`);
  }
}

async function stagesVsBare(dir: string): Promise<Record<string, number>> {
  const { repo, root, base } = await exampleRepo(dir);
  const scratch = path.join(dir, 'scratch');
  await mkdir(scratch, { recursive: true });
  const plan = await readVerifyPlan(repo, await resolveBranchCommit(repo, 'main'));
  const names: PromotionStage[] = ['compile', 'targetedTests', 'startupSmoke'];
  const forge: Record<PromotionStage, number[]> = { compile: [], targetedTests: [], startupSmoke: [] };
  const bare: Record<PromotionStage, number[]> = { compile: [], targetedTests: [], startupSmoke: [] };
  const totals = { forge: [] as number[], bare: [] as number[] };
  let n = 0;
  /** A fresh worktree holding a fresh change, its node_modules linked. */
  const fresh = async (): Promise<{ worktree: string; stages: PlannedStage[]; runId: string }> => {
    const runId = `stages-${n++}`;
    const files = [{ path: 'src/tools/sum.ts', content: (await readExample('src/tools/sum.ts')) + `// bench run ${runId}\n` }];
    const stages = planStages(
      plan,
      files.map((f) => f.path),
    );
    const { path: worktree } = await createWorktree({ repo, runId, commit: base, root });
    await linkNodeModules({ repo, worktree, changedPaths: files.map((f) => f.path), nodeModules: nodeModules() });
    await commitChange({ repo, runId, worktree, base, files, message: 'bench', identity: IDENTITY, date: Date.UTC(2026, 10, 24) });
    return { worktree, stages, runId };
  };
  const forgeRound = async (record: boolean) => {
    const { worktree, stages, runId } = await fresh();
    let total = 0;
    for (const stage of stages) {
      let status = '';
      const ms = await timeMs(async () => {
        status = (await runStage(stage, { worktree, defaults: DEFAULTS, tmpDir: scratch })).status;
      });
      if (status !== 'pass') throw new Error(`runStage ${stage.name}: ${status}`);
      total += ms;
      if (record) forge[stage.name].push(ms);
    }
    if (record) totals.forge.push(total);
    await cleanupRun({ repo, runId, root });
  };
  const bareRound = async (record: boolean) => {
    const { worktree, stages, runId } = await fresh();
    let total = 0;
    for (const stage of stages) {
      const ms = await timeMs(() => bareStage(stage, worktree, scratch));
      total += ms;
      if (record) bare[stage.name].push(ms);
    }
    if (record) totals.bare.push(total);
    await cleanupRun({ repo, runId, root });
  };
  await bareRound(false);
  await forgeRound(false);
  for (let i = 0; i < STAGE_RUNS; i++) {
    if (i % 2 === 0) {
      await bareRound(true);
      await forgeRound(true);
    } else {
      await forgeRound(true);
      await bareRound(true);
    }
  }
  const figures: Record<string, number> = {};
  for (const name of names) {
    console.log(statsRow(`bare ${name}`, bare[name], 36));
    console.log(statsRow(`runStage ${name}`, forge[name], 36));
    figures[`stage_${snake(name)}_p50_ms`] = round(percentile(forge[name], 50), 1);
    figures[`stage_${snake(name)}_bare_p50_ms`] = round(percentile(bare[name], 50), 1);
    figures[`stage_${snake(name)}_vs_bare_p50`] = round(percentile(forge[name], 50) / percentile(bare[name], 50));
  }
  console.log(statsRow('bare, three stages', totals.bare, 36));
  console.log(statsRow('runStage, three stages', totals.forge, 36));
  const ratio = round(percentile(totals.forge, 50) / percentile(totals.bare, 50));
  console.log(`runStage / bare, three stages (p50): ${ratio}×`);
  figures.stages_vs_bare_p50 = ratio;
  figures.stages_p50_ms = round(percentile(totals.forge, 50), 1);
  figures.stages_bare_p50_ms = round(percentile(totals.bare, 50), 1);
  return figures;
}

function readExample(rel: string): Promise<string> {
  return readFile(path.join(packageRoot(), 'examples', 'agent-repo', rel), 'utf8');
}
