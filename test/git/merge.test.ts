import { readFile, realpath, writeFile } from 'node:fs/promises';
import path from 'node:path';
import {
  InvalidInputError,
  advanceLiveCheckout,
  commitChange,
  compareAndSwapBranch,
  createWorktree,
  inspectLiveCheckout,
  mergeIntoBranch,
  rebaseChange,
} from '../../src/git';
import { withKeyLock } from '../../src/git/run-lock';
import { DATE, IDENTITY, agentRepo, commitByHand, sh, type Sandbox } from './fixture';

let s: Sandbox;
beforeEach(async () => {
  s = await agentRepo();
});
afterEach(() => s.dispose());

const SUM_PATH = 'src/tools/sum.ts';

/** The run's change: sum.ts with one extra comment line at the end. */
async function proposeChange(runId = 'run', base = s.base): Promise<{ commit: string; worktree: string; content: string }> {
  const original = await sh(s.repo, 'show', `${base}:${SUM_PATH}`);
  const content = `${original}\n// changed by the agent\n`;
  const wt = await createWorktree({ repo: s.repo, runId, commit: base, root: s.root });
  const { commit } = await commitChange({
    repo: s.repo,
    runId,
    worktree: wt.path,
    base,
    files: [{ path: SUM_PATH, content }],
    message: 'sum: a comment',
    identity: IDENTITY,
    date: DATE,
  });
  return { commit, worktree: wt.path, content };
}

describe('compare-and-swap merge', () => {
  it('moves the branch from base to the tested commit; a repeat is already-merged', async () => {
    const { commit } = await proposeChange();
    expect(await compareAndSwapBranch({ repo: s.repo, branch: 'main', base: s.base, tested: commit })).toEqual({
      status: 'merged',
      branch: 'main',
      commit,
      previous: s.base,
    });
    expect(await sh(s.repo, 'rev-parse', 'main')).toBe(commit);
    expect(await compareAndSwapBranch({ repo: s.repo, branch: 'main', base: s.base, tested: commit })).toEqual({
      status: 'already-merged',
      branch: 'main',
      commit,
      head: commit,
    });
    // Someone built on it meanwhile: still merged, and the branch is not moved back.
    const later = await commitByHand(s.repo, { 'notes.md': 'later' });
    expect(await compareAndSwapBranch({ repo: s.repo, branch: 'main', base: s.base, tested: commit })).toMatchObject({ status: 'already-merged', head: later });
    expect(await sh(s.repo, 'rev-parse', 'main')).toBe(later);
    expect(await sh(s.repo, 'log', '--format=%s', '-3', 'main')).toBe('by hand\nsum: a comment\nThe example agent');
  });

  it('reports a branch that moved meanwhile, with its new head, and leaves it there', async () => {
    const { commit } = await proposeChange();
    const moved = await commitByHand(s.repo, { 'README.md': 'edited by hand\n' });
    expect(await compareAndSwapBranch({ repo: s.repo, branch: 'main', base: s.base, tested: commit })).toEqual({
      status: 'branch-moved',
      branch: 'main',
      head: moved,
      expected: s.base,
    });
    expect(await sh(s.repo, 'rev-parse', 'main')).toBe(moved);
  });

  it('two swaps from the same base: one merges, the other finds the branch moved', async () => {
    const a = await proposeChange('a');
    const wt = await createWorktree({ repo: s.repo, runId: 'b', commit: s.base, root: s.root });
    const b = await commitChange({
      repo: s.repo,
      runId: 'b',
      worktree: wt.path,
      base: s.base,
      files: [{ path: 'src/tools/b.ts', content: 'export {};\n' }],
      message: 'b',
      identity: IDENTITY,
      date: DATE,
    });
    const results = await Promise.all([a.commit, b.commit].map((tested) => compareAndSwapBranch({ repo: s.repo, branch: 'main', base: s.base, tested })));
    expect(results.map((r) => r.status).sort()).toEqual(['branch-moved', 'merged']);
    const winner = results.find((r) => r.status === 'merged') as { commit: string };
    expect(await sh(s.repo, 'rev-parse', 'main')).toBe(winner.commit);
  });

  it('refuses a tested commit that does not descend from the base', async () => {
    const { commit } = await proposeChange();
    const other = await commitByHand(s.repo, { 'x.md': 'x' });
    await expect(compareAndSwapBranch({ repo: s.repo, branch: 'main', base: other, tested: commit })).rejects.toBeInstanceOf(InvalidInputError);
  });
});

describe('rebasing the change onto a moved head', () => {
  it('puts the change on the new head with the same message and identity; again = up-to-date; then it merges', async () => {
    const { commit } = await proposeChange();
    const moved = await commitByHand(s.repo, { 'src/tools/slugify.ts': '// moved by hand\n' });
    const rebased = await rebaseChange({ repo: s.repo, runId: 'run', onto: moved });
    expect(rebased).toMatchObject({ status: 'rebased', previous: commit, onto: moved });
    const next = (rebased as { commit: string }).commit;
    expect(await sh(s.repo, 'rev-parse', 'forge/promote/run')).toBe(next);
    expect(await sh(s.repo, 'log', '--format=%P|%an|%at|%s', '-1', next)).toBe(`${moved}|Forge|${DATE / 1000}|sum: a comment`);
    expect(await sh(s.repo, 'diff', '--name-only', moved, next)).toBe(SUM_PATH);
    expect(await sh(s.repo, 'show', `${next}:src/tools/slugify.ts`)).toBe('// moved by hand');
    expect(await rebaseChange({ repo: s.repo, runId: 'run', onto: moved })).toEqual({ status: 'up-to-date', commit: next, onto: moved });

    const wt = await createWorktree({ repo: s.repo, runId: 'run', commit: next, root: s.root });
    expect(wt.status).toBe('recreated');
    expect(await readFile(path.join(wt.path, 'src/tools/slugify.ts'), 'utf8')).toBe('// moved by hand\n');
    expect(await compareAndSwapBranch({ repo: s.repo, branch: 'main', base: moved, tested: next })).toMatchObject({ status: 'merged' });
  });

  it('merges edits to other lines of the same file', async () => {
    await proposeChange();
    const original = await sh(s.repo, 'show', `${s.base}:${SUM_PATH}`);
    const moved = await commitByHand(s.repo, { [SUM_PATH]: `// a header by hand\n${original}\n` });
    const rebased = await rebaseChange({ repo: s.repo, runId: 'run', onto: moved });
    expect(rebased.status).toBe('rebased');
    const merged = await sh(s.repo, 'show', `${(rebased as { commit: string }).commit}:${SUM_PATH}`);
    expect(merged.startsWith('// a header by hand')).toBe(true);
    expect(merged.endsWith('// changed by the agent')).toBe(true);
  });

  it('reports a conflict, naming the path, and leaves the run branch where it was', async () => {
    const { commit } = await proposeChange();
    const original = await sh(s.repo, 'show', `${s.base}:${SUM_PATH}`);
    const moved = await commitByHand(s.repo, { [SUM_PATH]: `${original}\n// changed by hand instead\n` });
    const result = await rebaseChange({ repo: s.repo, runId: 'run', onto: moved });
    expect(result).toMatchObject({ status: 'conflict', onto: moved, paths: [SUM_PATH] });
    expect((result as { reason: string }).reason).toContain(SUM_PATH);
    expect(await sh(s.repo, 'rev-parse', 'forge/promote/run')).toBe(commit);
  });

  it('reports an empty change when the new head already has it, and a rewritten history as a conflict', async () => {
    const { content } = await proposeChange();
    const same = await commitByHand(s.repo, { [SUM_PATH]: content });
    expect(await rebaseChange({ repo: s.repo, runId: 'run', onto: same })).toMatchObject({ status: 'empty', onto: same });
    await sh(s.repo, 'checkout', '-q', '--orphan', 'rewritten');
    await sh(s.repo, 'commit', '-q', '-m', 'a new root');
    const root = await sh(s.repo, 'rev-parse', 'HEAD');
    expect(await rebaseChange({ repo: s.repo, runId: 'run', onto: root })).toMatchObject({
      status: 'conflict',
      paths: [],
      reason: expect.stringContaining('rewritten'),
    });
  });
});

describe('bringing the live checkout forward', () => {
  it('inspects, merges, then advances the files and index of the touched paths; again = up-to-date', async () => {
    const { commit, content } = await proposeChange();
    const input = { repo: s.repo, branch: 'main', base: s.base, tested: commit };
    expect(await inspectLiveCheckout(input)).toEqual({ status: 'ready', checkout: s.repo, paths: [SUM_PATH] });
    await compareAndSwapBranch(input);
    expect(await advanceLiveCheckout(input)).toEqual({ status: 'advanced', checkout: s.repo, paths: [SUM_PATH] });
    expect(await readFile(path.join(s.repo, SUM_PATH), 'utf8')).toBe(content);
    expect(await sh(s.repo, 'status', '--porcelain')).toBe('');
    expect(await advanceLiveCheckout(input)).toEqual({ status: 'up-to-date', checkout: s.repo, paths: [SUM_PATH] });
  });

  it('keeps local changes elsewhere', async () => {
    const { commit, content } = await proposeChange();
    await writeFile(path.join(s.repo, 'README.md'), 'my notes\n');
    await writeFile(path.join(s.repo, 'scratch.txt'), 'untracked\n');
    await writeFile(path.join(s.repo, 'src/tools/slugify.ts'), '// staged by hand\n');
    await sh(s.repo, 'add', 'src/tools/slugify.ts');
    const input = { repo: s.repo, branch: 'main', base: s.base, tested: commit };
    expect((await inspectLiveCheckout(input)).status).toBe('ready');
    await compareAndSwapBranch(input);
    expect((await advanceLiveCheckout(input)).status).toBe('advanced');
    expect(await readFile(path.join(s.repo, SUM_PATH), 'utf8')).toBe(content);
    expect(await readFile(path.join(s.repo, 'README.md'), 'utf8')).toBe('my notes\n');
    expect((await sh(s.repo, 'status', '--porcelain')).split('\n').sort()).toEqual(['?? scratch.txt', 'M  src/tools/slugify.ts', 'M README.md']);
  });

  it('refuses when a touched path has local changes, and changes nothing', async () => {
    const { commit } = await proposeChange();
    await writeFile(path.join(s.repo, SUM_PATH), '// my own edit\n');
    const input = { repo: s.repo, branch: 'main', base: s.base, tested: commit };
    const refused = await inspectLiveCheckout(input);
    expect(refused).toMatchObject({ status: 'refused', checkout: s.repo, paths: [SUM_PATH] });
    expect((refused as { reason: string }).reason).toContain(`local changes in ${SUM_PATH}`);
    expect(await sh(s.repo, 'rev-parse', 'main')).toBe(s.base);

    // Even after the branch moved (a race with the user's edit), advancing refuses and writes nothing.
    await compareAndSwapBranch(input);
    const indexBefore = await sh(s.repo, 'ls-files', '-s', SUM_PATH);
    expect((await advanceLiveCheckout(input)).status).toBe('refused');
    expect(await readFile(path.join(s.repo, SUM_PATH), 'utf8')).toBe('// my own edit\n');
    expect(await sh(s.repo, 'ls-files', '-s', SUM_PATH)).toBe(indexBefore);
  });

  it('refuses a staged change or an untracked file in a touched path', async () => {
    const { commit } = await proposeChange();
    const input = { repo: s.repo, branch: 'main', base: s.base, tested: commit };
    await writeFile(path.join(s.repo, SUM_PATH), '// staged\n');
    await sh(s.repo, 'add', SUM_PATH);
    expect((await inspectLiveCheckout(input)).status).toBe('refused');
    await sh(s.repo, 'reset', '-q', '--hard');

    const wt = await createWorktree({ repo: s.repo, runId: 'new-file', commit: s.base, root: s.root });
    const added = await commitChange({
      repo: s.repo,
      runId: 'new-file',
      worktree: wt.path,
      base: s.base,
      files: [{ path: 'src/tools/new.ts', content: 'export {};\n' }],
      message: 'new',
      identity: IDENTITY,
      date: DATE,
    });
    await writeFile(path.join(s.repo, 'src/tools/new.ts'), '// untracked, mine\n');
    expect(await inspectLiveCheckout({ ...input, tested: added.commit })).toMatchObject({ status: 'refused', paths: ['src/tools/new.ts'] });
  });

  it('removes files the tested commit deletes', async () => {
    await sh(s.repo, 'worktree', 'add', '-q', '-b', 'side', path.join(s.dir, 'side'));
    const side = path.join(s.dir, 'side');
    await sh(side, 'rm', '-q', 'src/tools/truncate.test.ts');
    await sh(side, 'commit', '-q', '-m', 'drop a test');
    const tested = await sh(side, 'rev-parse', 'HEAD');
    await sh(s.repo, 'worktree', 'remove', side);
    const input = { repo: s.repo, branch: 'main', base: s.base, tested };
    await compareAndSwapBranch(input);
    expect(await advanceLiveCheckout(input)).toMatchObject({ status: 'advanced', paths: ['src/tools/truncate.test.ts'] });
    expect(await sh(s.repo, 'status', '--porcelain')).toBe('');
  });

  it('does nothing when no checkout has the branch checked out, and refuses to advance before the merge', async () => {
    const { commit } = await proposeChange();
    const input = { repo: s.repo, branch: 'main', base: s.base, tested: commit };
    await expect(advanceLiveCheckout(input)).rejects.toBeInstanceOf(InvalidInputError);
    await sh(s.repo, 'checkout', '-q', '-b', 'elsewhere');
    expect(await inspectLiveCheckout(input)).toEqual({ status: 'not-checked-out' });
    await compareAndSwapBranch(input);
    expect(await advanceLiveCheckout(input)).toEqual({ status: 'not-checked-out' });
  });
});

// The merge step's one call (what the workflow's mergeChange runs): the three calls above' verdicts, its reads done once.
describe('mergeIntoBranch: inspect, compare-and-swap and advance in one call', () => {
  it('merges and brings the live files forward; called again (a retried step) it is already merged and up to date', async () => {
    const { commit, content } = await proposeChange();
    const input = { repo: s.repo, branch: 'main', base: s.base, tested: commit };
    expect(await mergeIntoBranch(input)).toEqual({ status: 'merged', commit, live: { status: 'advanced', checkout: s.repo, paths: [SUM_PATH] } });
    expect(await sh(s.repo, 'rev-parse', 'main')).toBe(commit);
    expect(await readFile(path.join(s.repo, SUM_PATH), 'utf8')).toBe(content);
    expect(await sh(s.repo, 'status', '--porcelain')).toBe('');
    expect(await mergeIntoBranch(input)).toEqual({ status: 'already-merged', commit, live: { status: 'up-to-date', checkout: s.repo, paths: [SUM_PATH] } });
  });

  it('completes the live files of a merge interrupted after its compare-and-swap', async () => {
    const { commit, content } = await proposeChange();
    const input = { repo: s.repo, branch: 'main', base: s.base, tested: commit };
    await compareAndSwapBranch(input); // the step died here
    expect(await mergeIntoBranch(input)).toMatchObject({ status: 'already-merged', live: { status: 'advanced' } });
    expect(await readFile(path.join(s.repo, SUM_PATH), 'utf8')).toBe(content);
    expect(await sh(s.repo, 'status', '--porcelain')).toBe('');
  });

  it('refuses local changes in a touched path before moving anything, even a change that is not a fast-forward', async () => {
    const { commit } = await proposeChange();
    await writeFile(path.join(s.repo, SUM_PATH), '// my own edit\n');
    const refused = await mergeIntoBranch({ repo: s.repo, branch: 'main', base: s.base, tested: commit });
    expect(refused).toMatchObject({ status: 'refused', live: { status: 'refused', checkout: s.repo, paths: [SUM_PATH] } });
    expect(await sh(s.repo, 'rev-parse', 'main')).toBe(s.base);
    expect(await readFile(path.join(s.repo, SUM_PATH), 'utf8')).toBe('// my own edit\n');
    const unrelated = await commitByHand(s.repo, { 'README.md': 'unrelated\n' });
    await writeFile(path.join(s.repo, SUM_PATH), '// my own edit\n');
    expect((await mergeIntoBranch({ repo: s.repo, branch: 'main', base: unrelated, tested: commit })).status).toBe('refused');
  });

  it('answers branch-moved without writing, refuses a non-fast-forward, and merges without a live checkout', async () => {
    const { commit } = await proposeChange();
    const moved = await commitByHand(s.repo, { 'README.md': 'moved meanwhile\n' });
    const before = await readFile(path.join(s.repo, SUM_PATH), 'utf8');
    expect(await mergeIntoBranch({ repo: s.repo, branch: 'main', base: s.base, tested: commit })).toEqual({ status: 'branch-moved', head: moved });
    expect(await readFile(path.join(s.repo, SUM_PATH), 'utf8')).toBe(before);
    await expect(mergeIntoBranch({ repo: s.repo, branch: 'main', base: moved, tested: commit })).rejects.toBeInstanceOf(InvalidInputError);
    await sh(s.repo, 'branch', '-q', 'target', s.base);
    expect(await mergeIntoBranch({ repo: s.repo, branch: 'target', base: s.base, tested: commit })).toEqual({
      status: 'merged',
      commit,
      live: { status: 'not-checked-out' },
    });
    expect(await sh(s.repo, 'rev-parse', 'target')).toBe(commit);
  });
});

// The live checkout is located before the compare-and-swap and written after it. A user who switches it to another
// branch in between must not get the tested files written into that branch's checkout. The window is made
// deterministic by holding the checkout's lock (as a concurrent advance in this process would) across the switch.
it('mergeIntoBranch leaves a live checkout alone that switched to another branch after it was located', async () => {
  const { commit } = await proposeChange();
  const original = await readFile(path.join(s.repo, SUM_PATH), 'utf8');
  let release!: () => void;
  const held = new Promise<void>((r) => (release = r));
  let locked!: () => void;
  const lockTaken = new Promise<void>((r) => (locked = r));
  const holder = withKeyLock(`live\0${await realpath(s.repo)}`, () => {
    locked();
    return held;
  });
  await lockTaken;
  const merging = mergeIntoBranch({ repo: s.repo, branch: 'main', base: s.base, tested: commit });
  // The swap is done (the merge now waits for the lock to write the live files): the user switches branches.
  for (let i = 0; i < 500 && (await sh(s.repo, 'rev-parse', 'main')) !== commit; i++) await new Promise((r) => setTimeout(r, 10));
  expect(await sh(s.repo, 'rev-parse', 'main')).toBe(commit);
  await sh(s.repo, 'checkout', '-q', '-b', 'elsewhere', s.base);
  release();
  await holder;
  expect(await merging).toEqual({ status: 'merged', commit, live: { status: 'not-checked-out' } });
  expect(await readFile(path.join(s.repo, SUM_PATH), 'utf8')).toBe(original);
  expect(await sh(s.repo, 'status', '--porcelain')).toBe('');
});
