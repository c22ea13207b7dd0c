import { existsSync, mkdtempSync, readdirSync, renameSync, rmSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { ReverifySummary } from '../../src/client';
import { git, promotionLeftovers, seedRepository } from '../chaos/matrix/promotion';
import { startTestPlatform, useTemporal, type TestPlatform } from '../helpers/platform';

const temporal = useTemporal();

/*
 * The built-in repository's branch is re-verified with the tools (issue 12): the promotion stages on its head in a
 * fresh worktree, nothing merged; a failure reported with the envelope and not acted on; nothing left behind; no
 * repository, reported as skipped. A fresh copy of examples/agent-repo is the repository (FORGE_BUILTIN_REPO).
 */
const base = existsSync('/dev/shm') ? '/dev/shm' : tmpdir();
const space = mkdtempSync(path.join(base, 'forge-reverify-builtin-'));
const repo = path.join(space, 'agent-repo');
const worktreeRoot = path.join(space, 'worktrees');

describe('re-verification of the built-in branch', () => {
  let platform: TestPlatform;

  beforeAll(async () => {
    await seedRepository(repo);
    platform = await startTestPlatform(temporal(), 'pglite', {
      env: { FORGE_BUILTIN_REPO: repo, FORGE_PROMOTE_WORKTREE_ROOT: worktreeRoot, FORGE_REVERIFY_INTERVAL: '2h' },
    });
  }, 120_000);

  afterAll(async () => {
    await platform?.teardown();
    rmSync(space, { recursive: true, force: true });
  });

  /** A run of its own (not the namespace-wide schedule), on this platform's control queue. */
  async function reverify(label: string): Promise<ReverifySummary> {
    const handle = await temporal().client.workflow.start('reverifyToolsWorkflow', {
      taskQueue: platform.config.taskQueues.control,
      workflowId: `tool-reverify/builtin-${label}-${Date.now()}`,
      args: [{ trigger: 'now' }],
    });
    return (await handle.result()) as ReverifySummary;
  }

  async function repositoryState() {
    return {
      head: await git(repo, 'rev-parse', 'main'),
      status: await git(repo, 'status', '--porcelain', '--untracked-files=all'),
      branches: await git(repo, 'for-each-ref', '--format=%(refname)', 'refs/heads'),
      leftovers: await promotionLeftovers({ home: space }),
      rootEntries: existsSync(worktreeRoot) ? readdirSync(worktreeRoot) : [],
    };
  }

  test('a sound head: every stage passes on it, and nothing is moved or left', async () => {
    const before = await repositoryState();
    const summary = await reverify('sound');
    expect(summary.builtin).toMatchObject({ status: 'passed', repo, branch: 'main', commit: before.head });
    expect(summary.builtin!.stages.map((s) => [s.name, s.status])).toEqual([
      ['compile', 'pass'],
      ['targetedTests', 'pass'],
      ['startupSmoke', 'pass'],
    ]);
    // The whole tree is the changed set: each rule whose globs match a tracked file runs, the targeted tests with every
    // source file their rule maps, and the rule for the test setup's own files runs the whole suite.
    const tests = summary.builtin!.stages[1].commands!.map((c) => c.argv.join(' '));
    expect(tests).toEqual([expect.stringMatching(/--findRelatedTests -- .*src\/tools\/sum\.ts/), 'node node_modules/jest/bin/jest.js --ci']);
    expect(await repositoryState()).toEqual({ ...before, leftovers: [], rootEntries: [] });
  }, 300_000);

  test('a head that no longer compiles: reported with the envelope, not acted on, nothing left', async () => {
    const sum = path.join(repo, 'src/tools/sum.ts');
    await writeFile(sum, `${await readFile(sum, 'utf8')}\nexport const broken: number = 'not a number';\n`);
    await git(repo, 'commit', '-q', '-am', 'by hand: a type error');
    const before = await repositoryState();
    const summary = await reverify('broken');
    const builtin = summary.builtin!;
    expect(builtin).toMatchObject({ status: 'failed', branch: 'main', commit: before.head, failure: { category: 'compile', stage: 'compile' } });
    expect(builtin.failure!.command).toEqual(expect.arrayContaining(['node_modules/typescript/bin/tsc']));
    expect(builtin.failure!.exitCode).not.toBe(0);
    expect(`${builtin.failure!.stdoutTail}${builtin.failure!.stderrTail}`).toMatch(/sum\.ts.*TS2322/s);
    expect(builtin.stages.map((s) => [s.name, s.status])).toEqual([
      ['compile', 'fail'],
      ['targetedTests', 'skipped'],
      ['startupSmoke', 'skipped'],
    ]);
    // Reported only: main stays where it was, the checkout untouched, nothing left.
    expect(await repositoryState()).toEqual({ ...before, leftovers: [], rootEntries: [] });
    const description = await temporal().client.workflow.getHandle(summary.workflowId).describe();
    expect(description.searchAttributes.ForgeOutcome).toEqual(['failures']);
  }, 300_000);

  test('a plan on the head that does not validate: a failure at plan, reported; a detached HEAD: skipped', async () => {
    await writeFile(path.join(repo, 'forge.verify.json'), '{ "version": 2 }\n');
    await git(repo, 'commit', '-q', '-am', 'by hand: a broken plan');
    const before = await repositoryState();
    const broken = (await reverify('plan')).builtin!;
    expect(broken).toMatchObject({
      status: 'failed',
      commit: before.head,
      stages: [],
      failure: { category: 'refused', stage: 'plan', command: [], exitCode: null },
    });
    expect(broken.reason).toMatch(/forge\.verify\.json/);
    expect(await repositoryState()).toEqual({ ...before, leftovers: [], rootEntries: [] });

    await git(repo, 'checkout', '-q', '--detach');
    try {
      const detached = (await reverify('detached')).builtin!;
      expect(detached).toMatchObject({ status: 'skipped', stages: [] });
      expect(detached.reason).toMatch(/detached/);
    } finally {
      await git(repo, 'checkout', '-q', 'main');
    }
  }, 120_000);

  test('no repository: reported as skipped, the tools still re-verified', async () => {
    renameSync(repo, `${repo}.away`);
    try {
      const summary = await reverify('none');
      expect(summary.builtin).toMatchObject({ status: 'skipped', repo, stages: [] });
      expect(summary.builtin!.reason).toMatch(/not a git repository/);
      expect(summary.counts.batches).toBe(1);
    } finally {
      renameSync(`${repo}.away`, repo);
    }
  }, 120_000);
});
