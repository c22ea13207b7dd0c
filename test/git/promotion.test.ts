import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import {
  advanceLiveCheckout,
  cleanupRun,
  commitChange,
  compareAndSwapBranch,
  createWorktree,
  inspectLiveCheckout,
  linkNodeModules,
  planStages,
  readVerifyPlan,
  resolveBranchCommit,
  type ProposedFile,
} from '../../src/git';
import { DATE, FORGE_NODE_MODULES, IDENTITY, agentRepo, visibleLeftovers, type Sandbox } from './fixture';

// The steps the promotion workflow will take, without Temporal or the sandbox: proves the example repository's plan
// really verifies a change in a worktree that borrows Forge's node_modules.

let s: Sandbox;
beforeEach(async () => {
  s = await agentRepo();
});
afterEach(() => s.dispose());

interface Ran {
  stage: string;
  exitCode: number;
  output: string;
}

function runCommand(argv: string[], cwd: string, timeoutMs: number): Promise<{ exitCode: number; output: string }> {
  return new Promise((resolve) => {
    execFile(argv[0], argv.slice(1), { cwd, timeout: timeoutMs, env: { ...process.env, CI: '1' } }, (error, stdout, stderr) => {
      const code = (error as { code?: unknown } | null)?.code;
      resolve({ exitCode: error ? (typeof code === 'number' ? code : -1) : 0, output: `${stdout}${stderr}` });
    });
  });
}

async function verify(runId: string, files: ProposedFile[]): Promise<{ ran: Ran[]; commit: string; base: string }> {
  const base = await resolveBranchCommit(s.repo, 'main');
  const plan = await readVerifyPlan(s.repo, base);
  const stages = planStages(
    plan,
    files.map((f) => f.path),
  );
  const wt = await createWorktree({ repo: s.repo, runId, commit: base, root: s.root });
  const deps = await linkNodeModules({ repo: s.repo, worktree: wt.path, changedPaths: files.map((f) => f.path), nodeModules: FORGE_NODE_MODULES });
  expect(deps.status).toBe('linked');
  const { commit } = await commitChange({ repo: s.repo, runId, worktree: wt.path, base, files, message: `agent: ${runId}`, identity: IDENTITY, date: DATE });
  const ran: Ran[] = [];
  for (const stage of stages) {
    for (const command of stage.commands) {
      const result = await runCommand(command.argv, wt.path, command.timeoutMs ?? 60_000);
      ran.push({ stage: stage.name, ...result });
      if (result.exitCode !== 0) return { ran, commit, base };
    }
  }
  return { ran, commit, base };
}

it('a good change passes compile, its related tests and the smoke, is merged and reaches the live checkout', async () => {
  const sumPath = 'src/tools/sum.ts';
  const content = (await readFile(path.join(s.repo, sumPath), 'utf8')).replace(
    'values.reduce((total, v) => total + v, 0)',
    'values.reduce((t, v) => t + v, 0)',
  );
  const { ran, commit, base } = await verify('good', [{ path: sumPath, content }]);
  expect(ran.map((r) => [r.stage, r.exitCode])).toEqual([
    ['compile', 0],
    ['targetedTests', 0],
    ['startupSmoke', 0],
  ]);
  expect(ran[1].output).toContain('src/tools/sum.test.ts');
  expect(ran[2].output).toContain('startup-smoke ok: 4 tools');

  const input = { repo: s.repo, branch: 'main', base, tested: commit };
  expect((await inspectLiveCheckout(input)).status).toBe('ready');
  expect((await compareAndSwapBranch(input)).status).toBe('merged');
  expect((await advanceLiveCheckout(input)).status).toBe('advanced');
  expect(await readFile(path.join(s.repo, sumPath), 'utf8')).toBe(content);
  await cleanupRun({ repo: s.repo, runId: 'good', root: s.root });
  expect(await visibleLeftovers(s)).toEqual({ worktrees: [s.repo], branches: '', rootEntries: [] });
}, 120_000);

it('a change that breaks compile fails the compile stage with file:line:col; one that breaks a test fails the targeted tests', async () => {
  const broken = await verify('broken', [{ path: 'src/tools/slugify.ts', content: 'export const slugify: number = "not a number";\n' }]);
  expect(broken.ran.map((r) => [r.stage, r.exitCode === 0])).toEqual([['compile', false]]);
  expect(broken.ran[0].output).toMatch(/src\/tools\/slugify\.ts\(1,14\): error TS2322/);

  const original = await readFile(path.join(s.repo, 'src/tools/truncate.ts'), 'utf8');
  const wrong = await verify('wrong', [
    {
      path: 'src/tools/truncate.ts',
      content: original.replace("'…'", "'...'").replace("`${chars.slice(0, max - 1).join('')}…`", "`${chars.slice(0, max - 1).join('')}...`"),
    },
  ]);
  expect(wrong.ran.map((r) => [r.stage, r.exitCode === 0])).toEqual([
    ['compile', true],
    ['targetedTests', false],
  ]);
  expect(wrong.ran[1].output).toContain('FAIL src/tools/truncate.test.ts');
  for (const runId of ['broken', 'wrong']) await cleanupRun({ repo: s.repo, runId, root: s.root });
  expect(await visibleLeftovers(s)).toEqual({ worktrees: [s.repo], branches: '', rootEntries: [] });
}, 120_000);
