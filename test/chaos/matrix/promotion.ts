import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { cp, readFile, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import type { ForgeClient } from '../../../src/client';
import { EXAMPLE_REPO, FORGE_NODE_MODULES } from '../../git/fixture';
import { processTreeUnder } from './end-state';
import type { RunResult, RunSpace, Scenario } from './scenarios';

/**
 * The promotion scenarios of the matrix (issue 11): a good change to a built-in tool of a fresh copy of
 * examples/agent-repo, promoted through compile, targeted tests and the startup smoke into `main`, which the live
 * checkout has checked out; and the same change while `main` moves by hand, so the run rebases and verifies again.
 * Each run gets its repository and its worktree root under the cell's FORGE_HOME, so every process of its stages has
 * its working directory there (the matrix's process check looks there).
 */

const run = promisify(execFile);

const SUM = 'src/tools/sum.ts';
const MESSAGE = 'sum: say the order';

/** Where a run's repository and worktrees go, under its cell's FORGE_HOME. */
export const promotionPaths = (home: string) => ({ repo: path.join(home, 'agent-repo'), worktreeRoot: path.join(home, 'worktrees') });

/**
 * git as a person would run it, with a fixed identity and date: the base commit of every run's repository is the same
 * commit, so an uninterrupted run and a faulted one can be compared by commit ids where the ids must agree.
 */
export async function git(cwd: string, ...args: string[]): Promise<string> {
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env)) if (!key.startsWith('GIT_')) env[key] = value;
  const date = '2025-01-02T03:04:05Z';
  Object.assign(env, {
    GIT_AUTHOR_NAME: 'Human',
    GIT_AUTHOR_EMAIL: 'human@example.com',
    GIT_AUTHOR_DATE: date,
    GIT_COMMITTER_NAME: 'Human',
    GIT_COMMITTER_EMAIL: 'human@example.com',
    GIT_COMMITTER_DATE: date,
  });
  const { stdout } = await run('git', ['-c', 'init.defaultBranch=main', '-c', 'core.hooksPath=/dev/null', ...args], { cwd, env, maxBuffer: 16 * 1024 * 1024 });
  return stdout.trim();
}

/** A copy of examples/agent-repo with one commit on `main`, checked out, and Forge's node_modules linked in (as `forge up` seeds one). */
export async function seedRepository(repo: string): Promise<void> {
  await cp(EXAMPLE_REPO, repo, { recursive: true, filter: (src) => !/[/\\](node_modules|dist)$/.test(src) });
  await git(repo, 'init', '-q');
  await git(repo, 'add', '-A');
  await git(repo, 'commit', '-q', '-m', 'The example agent');
  await symlink(FORGE_NODE_MODULES, path.join(repo, 'node_modules'), 'dir');
}

async function change(repo: string): Promise<{ path: string; content: string }> {
  const content = (await readFile(path.join(repo, SUM), 'utf8')).replace('Adds finite numbers', 'Adds finite numbers, left to right');
  return { path: SUM, content };
}

/** Commit ids that depend on the run's start time (the tested commit's date) are replaced; the base's is not. */
const scrubCommits = (text: string, keep: string[]) => text.replace(/\b[0-9a-f]{7,40}\b/g, (id) => (keep.some((k) => k.startsWith(id)) ? id : '<commit>'));

/** Every file of the live checkout (not .git/, not the node_modules link) with a hash of its contents. */
function liveFiles(dir: string, prefix = ''): string[] {
  return readdirSync(path.join(dir, prefix), { withFileTypes: true })
    .filter((e) => prefix !== '' || (e.name !== '.git' && e.name !== 'node_modules'))
    .flatMap((e) => {
      const rel = path.join(prefix, e.name);
      if (e.isDirectory()) return liveFiles(dir, rel);
      if (e.isSymbolicLink()) return [`${rel} -> ${readlinkSync(path.join(dir, rel))}`];
      return [
        `${rel} ${createHash('sha256')
          .update(readFileSync(path.join(dir, rel)))
          .digest('hex')
          .slice(0, 16)}`,
      ];
    })
    .sort();
}

/**
 * Waits until the stage whose command line contains `marker` runs in the run's worktree, with its tree busy for
 * `settleMs` (so jest has its workers, tsc is reading the program), and returns every process of the tree then: the
 * harness SIGKILLs the worker at that instant, and each of them must die with it.
 */
function duringStage(marker: string, settleMs: number) {
  return async (space: RunSpace) => {
    const root = promotionPaths(space.home).worktreeRoot;
    let seenAt: number | undefined;
    for (const deadline = Date.now() + 120_000; Date.now() < deadline;) {
      const tree = processTreeUnder(root);
      if (tree.some((p) => p.cmdline.includes(marker))) {
        seenAt ??= Date.now();
        if (Date.now() - seenAt >= settleMs) return tree;
      }
      await new Promise((r) => setTimeout(r, 25));
    }
    throw new Error(`no process of the stage (${marker}) ran in the worktree within 120 s`);
  };
}

async function promote(forge: ForgeClient, space: RunSpace): Promise<RunResult> {
  const { repo } = promotionPaths(space.home);
  const result = await forge.promoteBuiltin({ repo, changes: [await change(repo)], message: MESSAGE });
  return result as unknown as RunResult;
}

const NOTES = { path: 'src/tools/notes.ts', content: 'export const NOTE = 1;\n' };

/**
 * The moved-branch path: once the first round's compile stage runs, someone commits another file on `main` by hand
 * (with the fixed date: the same commit in every run), so the first merge finds the branch moved, and the change is
 * rebased onto it (rebaseWorkspace) and verified again. The compile stage takes seconds and the commit tens of
 * milliseconds, so the branch has always moved before the first merge; `rounds: 2` in the outcome says it did.
 */
async function promoteWhileMoving(forge: ForgeClient, space: RunSpace): Promise<RunResult> {
  const { repo } = promotionPaths(space.home);
  const handle = await forge.startPromoteBuiltin({ repo, changes: [await change(repo)], message: MESSAGE });
  const result = handle.result();
  const first = await Promise.race([duringStage('typescript/bin/tsc', 0)(space).then(() => 'compiling' as const), result.then(() => 'ended' as const)]);
  if (first === 'ended') throw new Error('the promotion ended before its compile stage was seen running: main was never moved');
  await writeFile(path.join(repo, NOTES.path), NOTES.content);
  await git(repo, 'add', '--', NOTES.path);
  await git(repo, 'commit', '-q', '-m', 'by hand');
  return (await result) as unknown as RunResult;
}

/** Nothing of a run may be left: no worktree but the main one, no run branch, nothing under the worktree root. */
export async function promotionLeftovers(space: Pick<RunSpace, 'home'>): Promise<string[]> {
  const { repo, worktreeRoot } = promotionPaths(space.home);
  const left: string[] = [];
  const worktrees = (await git(repo, 'worktree', 'list', '--porcelain'))
    .split('\n')
    .filter((l) => l.startsWith('worktree '))
    .map((l) => l.slice('worktree '.length));
  for (const w of worktrees.slice(1)) left.push(`worktree ${w}`);
  for (const b of (await git(repo, 'branch', '--list', 'forge/promote/*')).split('\n').filter(Boolean)) left.push(`branch ${b.trim()}`);
  if (existsSync(worktreeRoot)) for (const e of readdirSync(worktreeRoot)) left.push(`${worktreeRoot}/${e}`);
  return left;
}

/** What the promotion scenarios share: a fresh repository per run, and what is compared and what must be gone. */
const promotion: Omit<Scenario, 'label' | 'points' | 'run'> = {
  workflowType: 'promoteBuiltinWorkflow',
  env(home) {
    const { worktreeRoot } = promotionPaths(home);
    return { FORGE_PROMOTE_WORKTREE_ROOT: worktreeRoot };
  },
  setup: (_forge, space) => seedRepository(promotionPaths(space.home).repo),
  outcome(r, _run, space) {
    const diagnostics = r.diagnostics as { overall: string; failure?: unknown; stages: { name: string; status: string; exitCode: number | null }[] };
    const steps = r.steps as { name: string; status: string }[];
    return {
      status: r.status,
      rounds: r.rounds,
      // The message names the tested commit, whose id depends on the run's start time (its commit date), and the
      // live checkout, which is under the cell's FORGE_HOME.
      message: typeof r.message === 'string' ? scrubCommits(r.message.split(space.home).join('<home>'), []) : r.message,
      overall: diagnostics.overall,
      failure: diagnostics.failure ?? null,
      stages: diagnostics.stages.map((s) => [s.name, s.status, s.exitCode]),
      steps: steps.map((s) => [s.name, s.status]),
    };
  },
  /**
   * The repository after the run. Commit ids of what the run made differ between two runs of the same input (the
   * commit date is the run's start time), so of the branch's head what must be equal is compared: its tree, its
   * message, its author and committer, and its parent, which is the base commit (or the commit made by hand), made
   * with a fixed date, so the same id in every run. The reflog of `main` shows how often it moved (one promotion: one
   * move); the live checkout's files and status show it was brought forward and nothing else changed.
   */
  async state(space) {
    const { repo } = promotionPaths(space.home);
    const base = await git(repo, 'rev-list', '--max-parents=0', 'main');
    const head = await git(repo, 'show', '-s', '--format=tree %T%nparents %P%nauthor %an <%ae>%ncommitter %cn <%ce>%n%n%B', 'main');
    return {
      branches: (await git(repo, 'for-each-ref', '--format=%(refname)', 'refs/heads')).split('\n'),
      checkedOut: await git(repo, 'symbolic-ref', 'HEAD'),
      mainHead: head.split('\n'),
      commitsOnMain: await git(repo, 'rev-list', '--count', 'main'),
      mainReflog: scrubCommits(await git(repo, 'reflog', 'show', '--format=%gs', 'refs/heads/main'), [base]).split('\n'),
      liveStatus: await git(repo, 'status', '--porcelain', '--untracked-files=all'),
      liveFiles: liveFiles(repo),
    };
  },
  leftovers: promotionLeftovers,
};

export const promotionScenario: Scenario = {
  ...promotion,
  label: 'promote a change to the built-in sum',
  points: [
    'planPromotion.before',
    'planPromotion.after',
    'prepareWorkspace.before',
    'prepareWorkspace.after',
    'applyChange.before',
    'applyChange.after',
    // The first verifyStage of the run is the compile stage: before it, and after it passed.
    'verifyStage.before',
    'verifyStage.after',
    // Not fault points of the worker's own: the harness SIGKILLs the worker process (only it, not its process group)
    // while the stage's process tree runs; the tree must die with it (pdeathsig) and the stage run again.
    'verifyStage.during-compile',
    'verifyStage.during-targetedTests',
    'mergeChange.before',
    'mergeChange.after',
    'cleanupPromotion.before',
    'cleanupPromotion.after',
  ],
  // The branch moved and the live checkout brought forward, but Temporal has not recorded it: the retried merge must
  // find its own work (already merged, files up to date) and say `promoted`, exactly once.
  fastPoint: 'mergeChange.after',
  externalKills: {
    'verifyStage.during-compile': duringStage('typescript/bin/tsc', 300),
    'verifyStage.during-targetedTests': duringStage('jest/bin/jest.js', 300),
  },
  run: promote,
};

/** rebaseWorkspace runs only when the branch moved under the run: a scenario of its own, in the full matrix only. */
export const movedBranchPromotionScenario: Scenario = {
  ...promotion,
  label: 'promote while main moves by hand (a rebase round)',
  points: ['rebaseWorkspace.before', 'rebaseWorkspace.after'],
  run: promoteWhileMoving,
};
