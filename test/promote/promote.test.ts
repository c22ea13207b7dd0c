import { spawnSync } from 'node:child_process';
import { mkdir, readFile, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { ForgeInputError, type PromoteBuiltinResult, type RunProgress } from '../../src/client';
import { agentRepo, commitByHand, FORGE_NODE_MODULES, sh, visibleLeftovers, type Sandbox } from '../git/fixture';
import { startTestPlatform, useTemporal, type TestPlatform } from '../helpers/platform';

/*
 * Promotions end to end: the real dev server, the real workers, real git on fresh copies of examples/agent-repo, and
 * the repository's own stage commands (tsc, jest, the startup smoke) run as bounded process trees.
 */

const temporal = useTemporal();

const SUM = 'src/tools/sum.ts';
const SUM_TEST = 'src/tools/sum.test.ts';

/** A fresh agent repository with Forge's node_modules linked in, as `forge up` seeds one. */
async function freshRepo(): Promise<Sandbox> {
  const s = await agentRepo();
  await symlink(FORGE_NODE_MODULES, path.join(s.repo, 'node_modules'), 'dir');
  return s;
}

describe('built-in promotion', () => {
  let platform: TestPlatform;
  const repos: Sandbox[] = [];
  let root: string;
  beforeAll(async () => {
    platform = await startTestPlatform(temporal(), 'pglite', { env: { FORGE_PROMOTE_STAGE_TIMEOUT_MS: '120000' } });
    root = platform.config.promotion.worktreeRoot ?? path.join('/dev/shm', 'forge-worktrees');
  }, 120_000);
  afterAll(async () => {
    await platform?.teardown();
    for (const r of repos) await r.dispose();
  });

  async function repo(): Promise<Sandbox> {
    const s = await freshRepo();
    repos.push(s);
    return s;
  }

  /** Nothing of a run is left: no worktree, no run branch, nothing of it under the worktree root. */
  async function expectNothingLeft(s: Sandbox, result: PromoteBuiltinResult): Promise<void> {
    const left = await visibleLeftovers({ ...s, root });
    expect(left.worktrees).toEqual([s.repo]);
    expect(left.branches).toBe('');
    if (result.diagnostics.workspace.path) expect(left.rootEntries).not.toContain(path.basename(result.diagnostics.workspace.path));
  }

  test('a good change is promoted: the branch is at exactly the tested commit, the live checkout has it, nothing is left', async () => {
    const s = await repo();
    const content = (await readFile(path.join(s.repo, SUM), 'utf8')).replace('Adds finite numbers', 'Adds finite numbers, left to right');
    const seen: RunProgress[] = [];
    const result = await platform.forge.promoteBuiltin(
      { repo: s.repo, changes: [{ path: SUM, content }], message: 'sum: say the order' },
      { onProgress: (p) => seen.push(p) },
    );
    expect(result).toMatchObject({ status: 'promoted', branch: 'main', baseCommit: s.base, rounds: 1 });
    expect(result.workflowId).toMatch(/^builtin-promote\/repo\/HEAD\//);
    expect(result.diagnostics.overall).toBe('pass');
    expect(result.diagnostics.failure).toBeUndefined();
    expect(result.diagnostics.stages.map((st) => [st.name, st.status])).toEqual([
      ['compile', 'pass'],
      ['targetedTests', 'pass'],
      ['startupSmoke', 'pass'],
    ]);
    for (const st of result.diagnostics.stages) {
      expect(st.exitCode).toBe(0);
      expect(st.cwd).toBe(result.diagnostics.workspace.path);
      expect(st.resource.maxRssBytes).toBeGreaterThan(0);
    }
    expect(result.diagnostics.workspace.isolated).toBe(true);
    expect(result.steps.map((st) => [st.name, st.status])).toEqual([
      ['workspace', 'done'],
      ['apply', 'done'],
      ['compile', 'done'],
      ['targetedTests', 'done'],
      ['startupSmoke', 'done'],
      ['merge', 'done'],
      ['cleanup', 'done'],
    ]);
    expect(seen.some((p) => p.stages.some((st) => st.name === 'targetedTests' && st.status === 'running'))).toBe(true);
    // The branch moved to the tested commit and nothing else: one commit on top of the base, with the agent's message.
    expect(await sh(s.repo, 'rev-parse', 'main')).toBe(result.mergedCommit);
    expect(await sh(s.repo, 'log', '--format=%s', `${s.base}..main`)).toBe('sum: say the order');
    expect(await sh(s.repo, 'rev-parse', `${result.mergedCommit}^`)).toBe(s.base);
    // The live checkout was brought forward: its file has the change and it is clean.
    expect(await readFile(path.join(s.repo, SUM), 'utf8')).toBe(content);
    expect(await sh(s.repo, 'status', '--porcelain', '--untracked-files=no')).toBe('');
    await expectNothingLeft(s, result);
  }, 180_000);

  test('a change that breaks compilation is rejected at compile with file:line:col; the branch does not move', async () => {
    const s = await repo();
    const content = (await readFile(path.join(s.repo, SUM), 'utf8')).replace(
      'return values.reduce((total, v) => total + v, 0);',
      "const label: number = 'total';\n  return values.reduce((total, v) => total + v, label);",
    );
    const result = await platform.forge.promoteBuiltin({ repo: s.repo, changes: [{ path: SUM, content }], message: 'break it' });
    expect(result.status).toBe('rejected');
    expect(result.mergedCommit).toBeUndefined();
    expect(result.diagnostics.overall).toBe('fail');
    expect(result.diagnostics.failure).toMatchObject({ category: 'compile', stage: 'compile' });
    const compile = result.diagnostics.stages.find((st) => st.name === 'compile')!;
    expect(compile.status).toBe('fail');
    expect(compile.locations?.[0]).toMatchObject({ file: SUM, line: 5 });
    expect(result.diagnostics.stages.map((st) => [st.name, st.status])).toEqual([
      ['compile', 'fail'],
      ['targetedTests', 'skipped'],
      ['startupSmoke', 'skipped'],
    ]);
    expect(await sh(s.repo, 'rev-parse', 'main')).toBe(s.base);
    expect(await sh(s.repo, 'status', '--porcelain')).toBe('');
    await expectNothingLeft(s, result);
  }, 180_000);

  test('a change that breaks a targeted test is rejected at targetedTests, naming the test file', async () => {
    const s = await repo();
    const content = (await readFile(path.join(s.repo, SUM), 'utf8')).replace('total + v, 0', 'total + v, 1');
    const result = await platform.forge.promoteBuiltin({ repo: s.repo, changes: [{ path: SUM, content }], message: 'off by one' });
    expect(result.status).toBe('rejected');
    expect(result.diagnostics.failure).toMatchObject({ category: 'test', stage: 'targetedTests' });
    const tests = result.diagnostics.stages.find((st) => st.name === 'targetedTests')!;
    expect(tests.status).toBe('fail');
    expect(tests.locations?.some((l) => l.file === SUM_TEST)).toBe(true);
    expect(await sh(s.repo, 'rev-parse', 'main')).toBe(s.base);
    await expectNothingLeft(s, result);
  }, 180_000);

  test('a path the plan does not map, a path out of the repository and one through a symlink are refused; nothing is made', async () => {
    const s = await repo();
    const unmapped = await platform.forge.promoteBuiltin({ repo: s.repo, changes: [{ path: 'README.md', content: 'new' }] });
    expect(unmapped).toMatchObject({ status: 'rejected', diagnostics: { failure: { category: 'refused', stage: 'plan' } } });
    expect(unmapped.message).toContain('README.md');

    const outside = await platform.forge.promoteBuiltin({ repo: s.repo, changes: [{ path: 'src/../../escape.ts', content: 'x' }] });
    expect(outside).toMatchObject({ status: 'rejected', diagnostics: { failure: { category: 'refused' } } });

    // A symlinked directory inside the repository that points out of it, committed by hand.
    const elsewhere = path.join(s.dir, 'elsewhere');
    await mkdir(elsewhere);
    await symlink(elsewhere, path.join(s.repo, 'src', 'linked'));
    await sh(s.repo, 'add', 'src/linked');
    await sh(s.repo, 'commit', '-q', '-m', 'a link out');
    const head = await sh(s.repo, 'rev-parse', 'main');
    const through = await platform.forge.promoteBuiltin({ repo: s.repo, changes: [{ path: 'src/linked/evil.ts', content: 'export {};' }] });
    expect(through).toMatchObject({ status: 'rejected', diagnostics: { failure: { category: 'refused' } } });
    await expect(readFile(path.join(elsewhere, 'evil.ts'))).rejects.toThrow();
    expect(await sh(s.repo, 'rev-parse', 'main')).toBe(head);
    for (const r of [unmapped, outside, through]) await expectNothingLeft(s, r);
  }, 180_000);

  test('a dry run verifies and merges nothing', async () => {
    const s = await repo();
    const content = (await readFile(path.join(s.repo, SUM), 'utf8')) + '\n// checked\n';
    const result = await platform.forge.promoteBuiltin({ repo: s.repo, changes: [{ path: SUM, content }], dryRun: true });
    expect(result).toMatchObject({ status: 'verified', baseCommit: s.base, diagnostics: { overall: 'pass' } });
    expect(result.mergedCommit).toMatch(/^[0-9a-f]{40}$/);
    expect(await sh(s.repo, 'rev-parse', 'main')).toBe(s.base);
    await expectNothingLeft(s, result);
  }, 180_000);

  test('the branch moved by hand during verification: the change is rebased, verified again, and promoted on top', async () => {
    const s = await repo();
    const content = (await readFile(path.join(s.repo, SUM), 'utf8')) + '\n// promoted\n';
    const handle = await platform.forge.startPromoteBuiltin({ repo: s.repo, changes: [{ path: SUM, content }], message: 'promoted on top' });
    // Once the first stage runs, someone commits another file on main by hand.
    let moved: string | undefined;
    const result = await handle.result({
      onProgress: (p) => {
        if (!moved && p.stages.some((st) => st.name === 'compile' && st.status === 'running')) {
          moved = 'pending';
          void commitByHand(s.repo, { 'src/tools/notes.ts': 'export const NOTE = 1;\n' }, 'by hand').then((c) => (moved = c));
        }
      },
    });
    expect(moved).toMatch(/^[0-9a-f]{40}$/);
    expect(result).toMatchObject({ status: 'promoted', baseCommit: moved, rounds: 2 });
    expect(await sh(s.repo, 'rev-parse', 'main')).toBe(result.mergedCommit);
    expect(await sh(s.repo, 'log', '--format=%s', `${s.base}..main`)).toBe('promoted on top\nby hand');
    await expectNothingLeft(s, result);
  }, 240_000);

  test('two promotions at once both end tested and merged, one after the other', async () => {
    const s = await repo();
    const sum = (await readFile(path.join(s.repo, SUM), 'utf8')) + '\n// first\n';
    const slug = (await readFile(path.join(s.repo, 'src/tools/slugify.ts'), 'utf8')) + '\n// second\n';
    const [a, b] = await Promise.all([
      platform.forge.promoteBuiltin({ repo: s.repo, changes: [{ path: SUM, content: sum }], message: 'first' }),
      platform.forge.promoteBuiltin({ repo: s.repo, changes: [{ path: 'src/tools/slugify.ts', content: slug }], message: 'second' }),
    ]);
    expect([a.status, b.status]).toEqual(['promoted', 'promoted']);
    // Every commit the branch went through was a tested one: the later of the two was verified on top of the earlier.
    const [first, second] = a.rounds <= b.rounds ? [a, b] : [b, a];
    expect(second.baseCommit).toBe(first.mergedCommit);
    expect(await sh(s.repo, 'rev-parse', 'main')).toBe(second.mergedCommit);
    expect(await readFile(path.join(s.repo, SUM), 'utf8')).toBe(sum);
    expect(await readFile(path.join(s.repo, 'src/tools/slugify.ts'), 'utf8')).toBe(slug);
    await expectNothingLeft(s, a);
    await expectNothingLeft(s, b);
  }, 300_000);

  test('a stage that hangs is cut at its timeout (category timeout), its whole tree dead', async () => {
    const s = await repo();
    // The plan (committed by hand, so it is the base's) gives the targeted tests 5 s.
    const planFile = path.join(s.repo, 'forge.verify.json');
    const plan = JSON.parse(await readFile(planFile, 'utf8'));
    plan.stages.targetedTests[0].timeoutMs = 5_000;
    await writeFile(planFile, JSON.stringify(plan, null, 2));
    await sh(s.repo, 'commit', '-q', '-am', 'tests get 5 s');
    const hang = "import { sum } from './sum';\n\ntest('hangs', async () => {\n  await new Promise(() => setInterval(() => sum([1]), 1000));\n}, 600_000);\n";
    const result = await platform.forge.promoteBuiltin({ repo: s.repo, changes: [{ path: 'src/tools/sum.hang.test.ts', content: hang }] });
    expect(result.status).toBe('rejected');
    expect(result.diagnostics.overall).toBe('timeout');
    expect(result.diagnostics.failure).toMatchObject({ category: 'timeout', stage: 'targetedTests' });
    const tests = result.diagnostics.stages.find((st) => st.name === 'targetedTests')!;
    expect(tests.durationMs).toBeLessThan(30_000);
    await expectNothingLeft(s, result);
  }, 180_000);

  /** Commits a change to the base's plan by hand: the plan a promotion runs by is its base's. */
  async function planByHand(s: Sandbox, edit: (plan: { stages: Record<string, { timeoutMs?: number; memoryMb?: number }[]> }) => void) {
    const planFile = path.join(s.repo, 'forge.verify.json');
    const plan = JSON.parse(await readFile(planFile, 'utf8'));
    edit(plan);
    await writeFile(planFile, JSON.stringify(plan, null, 2));
    await sh(s.repo, 'commit', '-q', '-am', 'plan by hand');
  }

  test('a test whose jest worker eats memory is cut at the memory bound of the whole tree', async () => {
    const s = await repo();
    await planByHand(s, (plan) => plan.stages.targetedTests.forEach((c) => (c.memoryMb = 768)));
    const config = (await readFile(path.join(s.repo, 'jest.config.js'), 'utf8')).replace(
      "testEnvironment: 'node',",
      "testEnvironment: 'node',\n  maxWorkers: 2,",
    );
    const hog =
      "it('eats memory', async () => {\n  const kept: Buffer[] = [];\n  for (let i = 0; i < 128; i++) {\n    kept.push(Buffer.alloc(32 * 1024 * 1024, 1));\n    await new Promise((r) => setTimeout(r, 5));\n  }\n  expect(kept.length).toBe(128);\n});\n";
    const result = await platform.forge.promoteBuiltin({
      repo: s.repo,
      changes: [
        { path: 'jest.config.js', content: config },
        { path: 'src/tools/hog.test.ts', content: hog },
        { path: 'src/tools/quick.test.ts', content: "it('is quick', () => expect(1 + 1).toBe(2));\n" },
      ],
    });
    expect(result.status).toBe('rejected');
    expect(result.diagnostics.failure).toMatchObject({ category: 'test', stage: 'targetedTests' });
    expect(result.diagnostics.failure?.reason).toMatch(/memory limit of 768 MiB/);
    expect(await sh(s.repo, 'rev-parse', 'main')).toBe(await sh(s.repo, 'rev-parse', 'HEAD'));
    await expectNothingLeft(s, result);
  }, 180_000);

  test('a test that floods its output is cut at the output limit, with a bounded tail', async () => {
    const s = await repo();
    const flood =
      "import { writeSync } from 'node:fs';\n\nit('floods', () => {\n  const line = Buffer.from('flood '.repeat(170) + '\\n');\n  for (let i = 0; i < 1_000_000; i++) {\n    for (let done = 0; done < line.length; ) {\n      try {\n        done += writeSync(1, line, done);\n      } catch (err) {\n        if ((err as NodeJS.ErrnoException).code !== 'EAGAIN') throw err;\n      }\n    }\n  }\n}, 1_000_000);\n";
    const result = await platform.forge.promoteBuiltin({ repo: s.repo, changes: [{ path: 'src/tools/flood.test.ts', content: flood }] });
    expect(result.status).toBe('rejected');
    expect(result.diagnostics.failure).toMatchObject({ category: 'test', stage: 'targetedTests' });
    expect(result.diagnostics.failure?.reason).toMatch(/output limit/);
    const tests = result.diagnostics.stages.find((st) => st.name === 'targetedTests')!;
    expect(Buffer.byteLength(tests.stdoutTail)).toBeLessThan(64 * 1024);
    await expectNothingLeft(s, result);
  }, 180_000);

  test('local changes in the live checkout in a touched path: rejected at merge, the branch and the local edit kept', async () => {
    const s = await repo();
    const mine = (await readFile(path.join(s.repo, SUM), 'utf8')) + '\n// my local edit\n';
    await writeFile(path.join(s.repo, SUM), mine);
    const theirs = (await readFile(path.join(s.repo, SUM), 'utf8')).replace('// my local edit', "// the agent's change");
    const result = await platform.forge.promoteBuiltin({ repo: s.repo, changes: [{ path: SUM, content: theirs }] });
    expect(result.status).toBe('rejected');
    expect(result.diagnostics.failure).toMatchObject({ category: 'refused', stage: 'merge' });
    expect(result.message).toContain(SUM);
    expect(await sh(s.repo, 'rev-parse', 'main')).toBe(s.base);
    expect(await readFile(path.join(s.repo, SUM), 'utf8')).toBe(mine);
    await expectNothingLeft(s, result);
  }, 180_000);

  test('cancelled by the client during a stage: the run ends cancelled and nothing is left, the tree dead', async () => {
    const s = await repo();
    const hang = "test('hangs', async () => {\n  await new Promise(() => setInterval(() => undefined, 1000));\n}, 600_000);\n";
    const handle = await platform.forge.startPromoteBuiltin({ repo: s.repo, changes: [{ path: 'src/tools/sum.hang.test.ts', content: hang }] });
    const temporalHandle = platform.env.client.workflow.getHandle(handle.workflowId);
    for (let i = 0; ; i++) {
      const p = await handle.progress();
      if (p?.stages.some((st) => st.name === 'targetedTests' && st.status === 'running')) break;
      if (i > 600) throw new Error('the targeted tests never started');
      await new Promise((r) => setTimeout(r, 100));
    }
    await new Promise((r) => setTimeout(r, 1_000)); // jest is up and hanging
    await temporalHandle.cancel();
    await expect(temporalHandle.result()).rejects.toThrow();
    expect((await temporalHandle.describe()).status.name).toBe('CANCELLED');
    const left = await visibleLeftovers({ ...s, root });
    expect(left.worktrees).toEqual([s.repo]);
    expect(left.branches).toBe('');
    expect(await sh(s.repo, 'rev-parse', 'main')).toBe(s.base);
    expect(spawnSync('pgrep', ['-f', 'sum.hang.test'], { encoding: 'utf8' }).stdout.trim()).toBe('');
  }, 180_000);

  test('a path that is no git repository is refused at once', async () => {
    const result = await platform.forge.promoteBuiltin({ repo: path.join(root, 'no-such-repo'), changes: [{ path: SUM, content: 'x' }] });
    expect(result).toMatchObject({ status: 'rejected', diagnostics: { failure: { category: 'refused', stage: 'plan' } } });
    expect(result.message).toContain('is not a git repository');
  }, 60_000);

  test('invalid input is refused by the client before anything starts', async () => {
    await expect(platform.forge.promoteBuiltin({ changes: [] })).rejects.toThrow(ForgeInputError);
    await expect(platform.forge.promoteBuiltin({ changes: [{ path: '', content: 'x' }] })).rejects.toThrow(ForgeInputError);
  });
});
