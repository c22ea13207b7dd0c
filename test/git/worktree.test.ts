import { lstat, mkdir, readFile, readlink, realpath, rm, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import {
  BranchNotFoundError,
  CommitNotFoundError,
  WorktreeRootError,
  cleanupRun,
  createWorktree,
  linkNodeModules,
  listWorktrees,
  resolveBranchCommit,
} from '../../src/git';
import { FORGE_NODE_MODULES, agentRepo, commitByHand, sh, visibleLeftovers, type Sandbox } from './fixture';

let s: Sandbox;
beforeEach(async () => {
  s = await agentRepo();
});
afterEach(() => s.dispose());

describe('resolving the target branch', () => {
  it('gives the commit of a branch, and a typed error for a missing one', async () => {
    expect(await resolveBranchCommit(s.repo, 'main')).toBe(s.base);
    await expect(resolveBranchCommit(s.repo, 'nope')).rejects.toBeInstanceOf(BranchNotFoundError);
    await expect(resolveBranchCommit(s.repo, '--output=x')).rejects.toThrow('is not usable');
  });
});

describe('creating the run worktree', () => {
  it('checks out the commit detached under the root; a second call is the same one worktree', async () => {
    const first = await createWorktree({ repo: s.repo, runId: 'run-1', commit: s.base, root: s.root });
    expect(first).toEqual({ path: path.join(await realpath(s.root), 'run-1'), commit: s.base, status: 'created' });
    await writeFile(path.join(first.path, 'marker'), 'kept');
    const second = await createWorktree({ repo: s.repo, runId: 'run-1', commit: 'main', root: s.root });
    expect(second).toEqual({ ...first, status: 'existing' });
    expect(await readFile(path.join(first.path, 'marker'), 'utf8')).toBe('kept');
    expect((await visibleLeftovers(s)).worktrees).toEqual([s.repo, first.path]);
    expect(await sh(first.path, 'rev-parse', 'HEAD')).toBe(s.base);
    expect(await sh(first.path, 'status', '--porcelain', '--branch')).toMatch(/^## HEAD \(no branch\)/);
    expect(await readFile(path.join(first.path, 'src/tools/sum.ts'), 'utf8')).toContain('export function sum');
  });

  it('two concurrent calls for one run make one worktree', async () => {
    const results = await Promise.all([1, 2].map(() => createWorktree({ repo: s.repo, runId: 'run-c', commit: s.base, root: s.root })));
    expect(results.map((r) => r.status).sort()).toEqual(['created', 'existing']);
    expect((await visibleLeftovers(s)).worktrees).toHaveLength(2);
  });

  it('replaces a worktree at another commit (a new round) with a fresh one', async () => {
    const first = await createWorktree({ repo: s.repo, runId: 'run-2', commit: s.base, root: s.root });
    await writeFile(path.join(first.path, 'left-by-a-stage'), 'x');
    const moved = await commitByHand(s.repo, { 'src/extra.ts': 'export const x = 1;\n' });
    const again = await createWorktree({ repo: s.repo, runId: 'run-2', commit: moved, root: s.root });
    expect(again).toEqual({ path: first.path, commit: moved, status: 'recreated' });
    await expect(lstat(path.join(first.path, 'left-by-a-stage'))).rejects.toThrow();
    expect((await visibleLeftovers(s)).worktrees).toHaveLength(2);
  });

  it('remakes a worktree whose add was killed half-way (locked "initializing")', async () => {
    const made = await createWorktree({ repo: s.repo, runId: 'run-3', commit: s.base, root: s.root });
    const gitDir = await sh(made.path, 'rev-parse', '--absolute-git-dir');
    await writeFile(path.join(gitDir, 'locked'), 'initializing');
    await rm(path.join(made.path, 'src'), { recursive: true });
    const again = await createWorktree({ repo: s.repo, runId: 'run-3', commit: s.base, root: s.root });
    expect(again.status).toBe('recreated');
    expect(await lstat(path.join(made.path, 'src/main.ts'))).toBeTruthy();
    expect((await listWorktrees(s.repo)).find((w) => w.path === made.path)?.locked).toBeNull();
  });

  it('remakes one whose directory was deleted by hand, and clears a stray directory in its place', async () => {
    const made = await createWorktree({ repo: s.repo, runId: 'run-4', commit: s.base, root: s.root });
    await rm(made.path, { recursive: true });
    expect((await createWorktree({ repo: s.repo, runId: 'run-4', commit: s.base, root: s.root })).status).toBe('recreated');
    await cleanupRun({ repo: s.repo, runId: 'run-4', root: s.root });
    await mkdir(path.join(s.root, 'run-4', 'junk'), { recursive: true });
    expect((await createWorktree({ repo: s.repo, runId: 'run-4', commit: s.base, root: s.root })).status).toBe('recreated');
  });

  it('works from a bare repository too, whose root is refused only inside its git directory', async () => {
    const bare = path.join(s.dir, 'bare.git');
    await sh(s.dir, 'clone', '-q', '--bare', s.repo, bare);
    const made = await createWorktree({ repo: bare, runId: 'run-b', commit: s.base, root: s.root });
    expect(made.status).toBe('created');
    expect(await sh(made.path, 'rev-parse', 'HEAD')).toBe(s.base);
    await expect(createWorktree({ repo: bare, runId: 'run-b2', commit: s.base, root: path.join(bare, 'wt') })).rejects.toBeInstanceOf(WorktreeRootError);
    await cleanupRun({ repo: bare, runId: 'run-b', root: s.root });
  });

  it('refuses a root inside the live checkout, an unknown commit and a bad run id', async () => {
    await expect(createWorktree({ repo: s.repo, runId: 'r', commit: s.base, root: path.join(s.repo, 'wt') })).rejects.toBeInstanceOf(WorktreeRootError);
    await expect(createWorktree({ repo: s.repo, runId: 'r', commit: 'f'.repeat(40), root: s.root })).rejects.toBeInstanceOf(CommitNotFoundError);
    await expect(createWorktree({ repo: s.repo, runId: '../up', commit: s.base, root: s.root })).rejects.toThrow('runId');
    expect((await visibleLeftovers(s)).worktrees).toEqual([s.repo]);
  });
});

describe('dependencies of the worktree', () => {
  it('links the given node_modules when the change leaves package.json and the lock alone; again = same link', async () => {
    const wt = await createWorktree({ repo: s.repo, runId: 'deps', commit: s.base, root: s.root });
    const input = { repo: s.repo, worktree: wt.path, changedPaths: ['src/tools/sum.ts'], nodeModules: FORGE_NODE_MODULES };
    const target = await realpath(FORGE_NODE_MODULES);
    expect(await linkNodeModules(input)).toEqual({ status: 'linked', target, created: true });
    expect(await linkNodeModules(input)).toEqual({ status: 'linked', target, created: false });
    expect(await readlink(path.join(wt.path, 'node_modules'))).toBe(target);
    expect(await sh(wt.path, 'status', '--porcelain')).toBe('');
  });

  it('reports an install is needed when the change touches a dependency file, or there is nothing to link', async () => {
    const wt = await createWorktree({ repo: s.repo, runId: 'deps2', commit: s.base, root: s.root });
    const touching = await linkNodeModules({ repo: s.repo, worktree: wt.path, changedPaths: ['src/a.ts', 'package.json'] });
    expect(touching).toMatchObject({ status: 'install-needed', paths: ['package.json'] });
    expect((touching as { reason: string }).reason).toContain('package.json');
    const none = await linkNodeModules({ repo: s.repo, worktree: wt.path, changedPaths: ['src/a.ts'] });
    expect(none).toMatchObject({ status: 'install-needed', reason: expect.stringContaining('no node_modules') });
  });

  it("uses the live checkout's node_modules unless its package.json differs from the base commit's", async () => {
    await symlink(FORGE_NODE_MODULES, path.join(s.repo, 'node_modules'));
    const wt = await createWorktree({ repo: s.repo, runId: 'deps3', commit: s.base, root: s.root });
    expect(await linkNodeModules({ repo: s.repo, worktree: wt.path, changedPaths: ['src/a.ts'] })).toMatchObject({ status: 'linked' });
    await writeFile(path.join(s.repo, 'package.json'), '{"name": "edited by hand"}');
    expect(await linkNodeModules({ repo: s.repo, worktree: wt.path, changedPaths: ['src/a.ts'] })).toMatchObject({
      status: 'install-needed',
      paths: ['package.json'],
    });
  });

  it('removing the worktree removes the link, never the packages it points at', async () => {
    const wt = await createWorktree({ repo: s.repo, runId: 'deps4', commit: s.base, root: s.root });
    await linkNodeModules({ repo: s.repo, worktree: wt.path, changedPaths: ['src/tools/sum.ts'], nodeModules: FORGE_NODE_MODULES });
    await cleanupRun({ repo: s.repo, runId: 'deps4', root: s.root });
    expect(await lstat(path.join(FORGE_NODE_MODULES, 'typescript', 'package.json'))).toBeTruthy();
    expect(await visibleLeftovers(s)).toEqual({ worktrees: [s.repo], branches: '', rootEntries: [] });
  });
});
