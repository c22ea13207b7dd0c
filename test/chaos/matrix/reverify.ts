import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { startTestInternet, type TestInternet } from '../../helpers/test-internet';
import { projectNodeModules } from '../../../src/sandbox/paths';
import path from 'node:path';
import type { ForgeClient } from '../../../src/client';
import type { ReverifySummary } from '../../../src/contract/reverify-runs';
import { git, promotionLeftovers, promotionPaths, seedRepository } from './promotion';
import type { RunResult, RunSpace, Scenario } from './scenarios';

/**
 * The re-verification scenario of the matrix (issues 9 and 12): three tools import a local package (an ES module the
 * tools import by absolute path) whose 2.0 renames the export two of them call, as a dependency rots. After the
 * change `rv_degraded` fails at v2 and passes at v1 (degraded), `rv_quarantined` fails at every version
 * (quarantined), `rv_fine` imports only what stayed (passes). The run is ReverifyToolsWorkflow started directly on
 * the cell's control queue with a workflow ID of its own (the `forge-reverify` schedule is one per namespace: cells
 * must not fight over it), two tools per batch, so it continues as new once.
 *
 * The package and the log of test runs live in one directory per jest process, not under the cell's FORGE_HOME: the
 * path is in every tool's source, so in its content hash, which the end state compares. The cells of one process run
 * one after another, and each setup rewrites the package and empties the log.
 *
 * The worker runs one test at a time (FORGE_SANDBOX_CONCURRENCY=1, FORGE_REVERIFY_PARALLELISM=1): then no test is in
 * flight when the worker dies at any point, so every test the run started was recorded before the kill or is started
 * after it, and the log of test runs must equal the uninterrupted run's: a test recorded before the kill and run again
 * after it (the run not resuming from what it recorded) shows as one more line.
 */

let made: string | undefined;
/** The directory, made at the first setup (importing the matrix makes nothing); removed by {@link removeReverifyPackage}. */
// Among the installed packages, which a run may read (it sees nothing else of the host's files).
const dir = () => (made ??= mkdtempSync(path.join(projectNodeModules(), '.forge-chaos-reverify-')));
const lib = () => path.join(dir(), 'lib.mjs');
const runLog = () => path.join(dir(), 'runs.log');

/**
 * Where a tool's test reports that it ran: a run writes nothing outside its own directory, so it tells a server on
 * the test's own internet (test/helpers/test-internet.ts), which appends the line to the log. Started at the first
 * setup, stopped with the package.
 */
let internet: Promise<TestInternet> | undefined;
/** The log server's address: set once the test's internet is up (before any tool source is made). */
let SERVER_HOST = '';
const logServer = ([address]: [string, string]) => `
const fs = require('node:fs');
require('node:http').createServer((req, res) => {
  let body = '';
  req.on('data', (d) => (body += d));
  req.on('end', () => { fs.appendFileSync(${JSON.stringify(runLog())}, body); res.end('ok'); });
}).listen(8080, '${address}', () => console.log('ready'));`;

/** Removes the package and the log, and stops the log's server (the matrix calls it after its last cell). */
export async function removeReverifyPackage(): Promise<void> {
  if (made) rmSync(made, { recursive: true, force: true });
  made = undefined;
  const started = internet;
  internet = undefined;
  await (await started?.catch(() => undefined))?.stop();
}

const LIB_V1 = 'export function scale(n) { return n * 2; }\nexport const offset = 7;\n';
const LIB_V2 = '// 2.0: scale() is now multiply()\nexport function multiply(n, by = 2) { return n * by; }\nexport const offset = 7;\n';

/** A tool; `uses` says which export of the package it imports (none: a pure tool). Its test logs that it ran. */
function tool(name: string, variant: string, uses?: 'scale' | 'offset'): string {
  const imp = uses ? `import { ${uses} } from ${JSON.stringify(lib())};\n` : '';
  const value = uses === 'scale' ? 'scale(n)' : uses === 'offset' ? 'n + offset' : 'n + 1';
  return `${imp}import { request } from 'node:http';
import { z } from 'zod';
export default {
  name: '${name}',
  description: 'a tool of the re-verification chaos scenario (${variant})',
  inputSchema: z.object({ n: z.number() }),
  async execute({ n }: { n: number }) {
    await new Promise<void>((resolve, reject) => {
      const req = request({ host: '${SERVER_HOST}', port: 8080, method: 'POST' }, (res) => { res.resume(); res.on('end', () => resolve()); });
      req.on('error', reject);
      req.end('${name} ${variant}\\n');
    });
    await new Promise((r) => setTimeout(r, 100));
    return { value: ${value}, variant: '${variant}' };
  },
};
`;
}

/** name → the package export each version imports, oldest first. */
const TOOLS: Record<string, ('scale' | 'offset' | undefined)[]> = {
  rv_degraded: [undefined, 'scale'],
  rv_fine: ['offset'],
  rv_quarantined: ['scale', 'scale'],
};

async function setup(forge: ForgeClient): Promise<void> {
  writeFileSync(lib(), LIB_V1);
  internet ??= startTestInternet(logServer);
  SERVER_HOST = (await internet).addresses[0];
  writeFileSync(runLog(), '');
  // The sandbox runs each test as a user of its own: the package must be readable and the log writable by it.
  chmodSync(dir(), 0o755);
  chmodSync(lib(), 0o644);
  chmodSync(runLog(), 0o666);
  for (const [name, versions] of Object.entries(TOOLS)) {
    for (const [i, uses] of versions.entries()) {
      const r = await forge.deployTool({ name, source: tool(name, `v${i + 1}`, uses), testInput: { n: 3 } });
      if (r.status !== 'active') throw new Error(`setup: deploying ${name} v${i + 1} ended ${r.status}: ${r.diagnostics.message}`);
    }
  }
  // The package's 2.0 lands; only the run's tests are logged from here on.
  writeFileSync(lib(), LIB_V2);
  writeFileSync(runLog(), '');
}

async function run(forge: ForgeClient, space: RunSpace): Promise<RunResult> {
  const handle = await forge.temporal.workflow.start('reverifyToolsWorkflow', {
    taskQueue: space.env.FORGE_TASK_QUEUE_CONTROL!,
    workflowId: `tool-reverify/chaos-${path.basename(space.home)}`,
    workflowTaskTimeout: '2 seconds',
    args: [{ trigger: 'now', batchSize: 2 }],
  });
  const summary = (await handle.result()) as ReverifySummary;
  // The scenario must reach what its points name (a degrade, a quarantine, two batches), or its cells prove nothing.
  const reached = { degraded: summary.degraded, quarantined: summary.quarantined, batches: summary.counts.batches };
  if (JSON.stringify(reached) !== JSON.stringify({ degraded: ['rv_degraded'], quarantined: ['rv_quarantined'], batches: 2 })) {
    throw new Error(`the run did not rot as the scenario says: ${JSON.stringify(summary)}`);
  }
  return summary as unknown as RunResult;
}

export const reverifyScenario: Scenario = {
  workflowType: 'reverifyToolsWorkflow',
  label: 'a package rots: one tool degraded, one quarantined, one fine',
  points: [
    'loadReverifyBatch.before',
    'loadReverifyBatch.after',
    'reverifyTest.before',
    'reverifyTest.after',
    'quarantineTool.before',
    'quarantineTool.after',
    'summarizeReverify.before',
    'summarizeReverify.after',
  ],
  // The test ran and its verdict is recorded, but Temporal has not heard: the retried activity must answer from the
  // record without running the test again.
  fastPoint: 'reverifyTest.after',
  env: () => ({ FORGE_SANDBOX_CONCURRENCY: '1', FORGE_REVERIFY_PARALLELISM: '1' }),
  setup,
  run,
  // The summary without what is the run's own: its key and workflow ID, and each test's duration. The cell has no
  // built-in repository: that part is reported skipped, naming the path under the cell's FORGE_HOME.
  outcome(r, _run, space) {
    const s = r as unknown as ReverifySummary;
    return {
      builtin: s.builtin ? JSON.parse(JSON.stringify(s.builtin).split(space.home).join('<home>')) : null,
      tools: s.tools.map(({ durationMs: _d, ...t }) => t),
      quarantined: s.quarantined,
      degraded: s.degraded,
      flaky: s.flaky,
      counts: s.counts,
      truncated: s.truncated,
    };
  },
  /** Every sandbox test the run ran, in order: a test run twice shows. */
  state: async () => ({ testsRun: readFileSync(runLog(), 'utf8').split('\n').filter(Boolean) }),
};

/**
 * The same run with its tests on the sandbox queue (FORGE_SANDBOX_TEST_HERE=off), as activities of their own, where the
 * scenario above runs them as local activities of the workflow task's worker: a kill around a queued test.
 */
export const reverifyQueuedScenario: Scenario = {
  ...reverifyScenario,
  label: 'a package rots, its tests on the sandbox queue',
  points: ['reverifyTest.before', 'reverifyTest.after'],
  fastPoint: undefined,
  env: () => ({ ...reverifyScenario.env!(''), FORGE_SANDBOX_TEST_HERE: 'off' }),
};

/**
 * The built-in branch's part of a run (issue 12), in the full matrix only: no tools, and a fresh copy of
 * examples/agent-repo as FORGE_BUILTIN_REPO, whose head every stage passes. A kill at any step of it (the promotion's
 * own steps, run by ReverifyToolsWorkflow) must end with the same report, the repository untouched, and no worktree,
 * run branch or stage directory left.
 */
export const reverifyBuiltinScenario: Scenario = {
  workflowType: 'reverifyToolsWorkflow',
  label: 're-verify the built-in branch (every stage passes)',
  points: [
    'planBranchCheck.before',
    'planBranchCheck.after',
    'prepareWorkspace.before',
    'prepareWorkspace.after',
    // The first verifyStage is the compile stage: before it, and after it passed.
    'verifyStage.before',
    'verifyStage.after',
    'cleanupPromotion.before',
    'cleanupPromotion.after',
  ],
  env(home) {
    const { repo, worktreeRoot } = promotionPaths(home);
    return { FORGE_BUILTIN_REPO: repo, FORGE_PROMOTE_WORKTREE_ROOT: worktreeRoot };
  },
  setup: (_forge, space) => seedRepository(promotionPaths(space.home).repo),
  run: async (forge, space) => {
    const handle = await forge.temporal.workflow.start('reverifyToolsWorkflow', {
      taskQueue: space.env.FORGE_TASK_QUEUE_CONTROL!,
      workflowId: `tool-reverify/chaos-builtin-${path.basename(space.home)}`,
      workflowTaskTimeout: '2 seconds',
      args: [{ trigger: 'now' }],
    });
    const summary = (await handle.result()) as ReverifySummary;
    if (summary.builtin?.status !== 'passed') throw new Error(`the built-in branch did not pass as the scenario says: ${JSON.stringify(summary.builtin)}`);
    return summary as unknown as RunResult;
  },
  outcome(r, _run, space) {
    const b = (r as unknown as ReverifySummary).builtin!;
    return {
      status: b.status,
      repo: b.repo.split(space.home).join('<home>'),
      branch: b.branch,
      // The base commit is made with a fixed date (seedRepository): the same id in every run.
      commit: b.commit,
      stages: b.stages.map((st) => [st.name, st.status, st.exitCode, (st.commands ?? []).map((c) => c.argv.join(' '))]),
      counts: (r as unknown as ReverifySummary).counts,
    };
  },
  async state(space) {
    const { repo } = promotionPaths(space.home);
    return {
      branches: (await git(repo, 'for-each-ref', '--format=%(refname) %(objectname)', 'refs/heads')).split('\n'),
      reflog: (await git(repo, 'reflog', 'show', '--format=%H %gs', 'refs/heads/main')).split('\n'),
      status: await git(repo, 'status', '--porcelain', '--untracked-files=all'),
    };
  },
  leftovers: promotionLeftovers,
};
