import { rm } from 'node:fs/promises';
import { cleanupRun, commitChange, compareAndSwapBranch, createWorktree, linkNodeModules, listLeftovers } from '../../src/git';
import { DATE, FORGE_NODE_MODULES, IDENTITY, agentRepo, sh, visibleLeftovers, type Sandbox } from './fixture';

let s: Sandbox;
beforeEach(async () => {
  s = await agentRepo();
});
afterEach(() => s.dispose());

const nothingLeft = () => ({ worktrees: [s.repo], branches: '', rootEntries: [] });

/** Runs a promotion up to `until`, the way a run killed at that point would leave it. */
async function runUntil(runId: string, until: 'worktree' | 'linked' | 'committed' | 'merged'): Promise<void> {
  const wt = await createWorktree({ repo: s.repo, runId, commit: s.base, root: s.root });
  await linkNodeModules({ repo: s.repo, worktree: wt.path, changedPaths: ['src/tools/sum.ts'], nodeModules: FORGE_NODE_MODULES });
  if (until === 'worktree' || until === 'linked') return;
  const { commit } = await commitChange({
    repo: s.repo,
    runId,
    worktree: wt.path,
    base: s.base,
    files: [{ path: 'src/tools/sum.ts', content: `${await sh(s.repo, 'show', `${s.base}:src/tools/sum.ts`)}\n// x\n` }],
    message: 'x',
    identity: IDENTITY,
    date: DATE,
  });
  if (until === 'merged') await compareAndSwapBranch({ repo: s.repo, branch: 'main', base: s.base, tested: commit });
}

describe('cleanup of a run', () => {
  it.each(['worktree', 'linked', 'committed', 'merged'] as const)(
    'after a run that got as far as %s, leaves nothing; a second cleanup is a no-op',
    async (until) => {
      await runUntil('r1', until);
      const before = await listLeftovers({ repo: s.repo, root: s.root });
      expect(before.worktrees).toHaveLength(1);
      expect(before.rootEntries).toEqual(['r1']);
      expect(before.branches.map((b) => b.name)).toEqual(until === 'committed' || until === 'merged' ? ['forge/promote/r1'] : []);

      const first = await cleanupRun({ repo: s.repo, runId: 'r1', root: s.root });
      expect(first).toEqual({ worktreeRemoved: true, branchDeleted: until === 'committed' || until === 'merged' });
      expect(await visibleLeftovers(s)).toEqual(nothingLeft());
      expect(await listLeftovers({ repo: s.repo, root: s.root })).toEqual({ worktrees: [], branches: [], rootEntries: [] });
      expect(await cleanupRun({ repo: s.repo, runId: 'r1', root: s.root })).toEqual({ worktreeRemoved: false, branchDeleted: false });
      expect(await sh(s.repo, 'rev-parse', 'main')).not.toBe('');
    },
  );

  it('is a no-op success for a run that never made anything, also when the root does not exist', async () => {
    expect(await cleanupRun({ repo: s.repo, runId: 'never', root: s.root })).toEqual({ worktreeRemoved: false, branchDeleted: false });
    expect(await visibleLeftovers(s)).toEqual(nothingLeft());
  });

  it('two concurrent cleanups of one run both succeed and leave nothing', async () => {
    await runUntil('r2', 'committed');
    const results = await Promise.all([1, 2].map(() => cleanupRun({ repo: s.repo, runId: 'r2', root: s.root })));
    expect(results.filter((r) => r.worktreeRemoved)).toHaveLength(1);
    expect(await visibleLeftovers(s)).toEqual(nothingLeft());
  });

  it('cleans up a worktree whose directory was already deleted by hand', async () => {
    await runUntil('r3', 'committed');
    await rm(`${s.root}/r3`, { recursive: true, force: true });
    expect((await listLeftovers({ repo: s.repo, root: s.root })).worktrees[0].prunable).toBe(true);
    await cleanupRun({ repo: s.repo, runId: 'r3', root: s.root });
    expect(await visibleLeftovers(s)).toEqual(nothingLeft());
  });

  it("removes only its own run's worktree and branch", async () => {
    await runUntil('mine', 'committed');
    await runUntil('theirs', 'committed');
    await cleanupRun({ repo: s.repo, runId: 'mine', root: s.root });
    const left = await listLeftovers({ repo: s.repo, root: s.root });
    expect(left.branches.map((b) => b.name)).toEqual(['forge/promote/theirs']);
    expect(left.rootEntries).toEqual(['theirs']);
    expect(left.worktrees.map((w) => w.path)).toEqual([`${s.root}/theirs`]);
  });
});
