import { chmod, lstat, readFile, symlink } from 'node:fs/promises';
import path from 'node:path';
import { EmptyChangeError, RunStateConflictError, UnsafePathError, commitChange, createWorktree, type CommitChangeInput } from '../../src/git';
import { DATE, IDENTITY, agentRepo, sh, type Sandbox } from './fixture';

let s: Sandbox;
beforeEach(async () => {
  s = await agentRepo();
});
afterEach(() => s.dispose());

const NEW_SUM = `import { objectInput, type Tool } from './tool';

/** Adds finite numbers; the sum of nothing is 0. */
export function sum(values: readonly number[]): number {
  let total = 0;
  for (const v of values) total += v;
  return total;
}

export const sumTool: Tool<{ values: number[] }, { sum: number }> = {
  name: 'sum',
  description: 'Adds a list of numbers.',
  run: (input) => {
    const values = objectInput('sum', input).values;
    if (!Array.isArray(values) || !values.every((v) => typeof v === 'number' && Number.isFinite(v))) {
      throw new TypeError('sum: values must be an array of finite numbers');
    }
    return { sum: sum(values) };
  },
  example: { input: { values: [1, 2, 3.5] }, output: { sum: 6.5 } },
};
`;

async function change(runId: string, files: CommitChangeInput['files']): Promise<CommitChangeInput> {
  const wt = await createWorktree({ repo: s.repo, runId, commit: s.base, root: s.root });
  return {
    repo: s.repo,
    runId,
    worktree: wt.path,
    base: s.base,
    files,
    message: 'sum: a plain loop\n\nAsked for by the agent.',
    identity: IDENTITY,
    date: DATE,
  };
}

describe('committing the proposed contents', () => {
  it('makes one commit on forge/promote/<run> with the message, identity and date given, and the files in the worktree', async () => {
    const input = await change('c1', [
      { path: 'src/tools/sum.ts', content: NEW_SUM },
      { path: 'src/tools/extra/notes.ts', content: Buffer.from('export const notes = 1;\n') },
    ]);
    const result = await commitChange(input);
    expect(result).toMatchObject({ branch: 'forge/promote/c1', base: s.base, status: 'created', paths: ['src/tools/extra/notes.ts', 'src/tools/sum.ts'] });
    expect(await sh(s.repo, 'rev-parse', 'forge/promote/c1')).toBe(result.commit);
    expect(await sh(s.repo, 'log', '--format=%an <%ae>|%cn <%ce>|%at|%P|%B', '-1', result.commit)).toBe(
      `Forge <forge@localhost>|Forge <forge@localhost>|${DATE / 1000}|${s.base}|sum: a plain loop\n\nAsked for by the agent.`,
    );
    expect(await sh(s.repo, 'rev-list', '--count', `${s.base}..${result.commit}`)).toBe('1');
    expect(await sh(s.repo, 'diff', '--name-only', s.base, result.commit)).toBe('src/tools/extra/notes.ts\nsrc/tools/sum.ts');
    expect(await readFile(path.join(input.worktree, 'src/tools/sum.ts'), 'utf8')).toBe(NEW_SUM);
    expect(await sh(input.worktree, 'rev-parse', 'HEAD')).toBe(result.commit);
    expect(await sh(input.worktree, 'status', '--porcelain')).toBe('');
    // The live checkout and its branch are untouched.
    expect(await sh(s.repo, 'rev-parse', 'main')).toBe(s.base);
    expect(await sh(s.repo, 'status', '--porcelain')).toBe('');
  });

  it('a second call gives the same commit; so do two at once', async () => {
    const input = await change('c2', [{ path: 'src/tools/sum.ts', content: NEW_SUM }]);
    const first = await commitChange(input);
    const second = await commitChange(input);
    expect(second).toEqual({ ...first, status: 'existing' });
    const later = await commitChange({ ...input, date: DATE + 60_000, message: 'another message, same change' });
    expect(later.commit).toBe(first.commit);

    const concurrent = await change('c3', [{ path: 'src/tools/sum.ts', content: NEW_SUM }]);
    const both = await Promise.all([commitChange(concurrent), commitChange(concurrent)]);
    expect(both[0].commit).toBe(both[1].commit);
    expect(both.map((r) => r.status).sort()).toEqual(['created', 'existing']);
    // Same change, same identity, same date, same message: the very same commit id across runs.
    expect(both[0].commit).toBe(first.commit);
  });

  it('keeps the executable bit of a file it replaces', async () => {
    await chmod(path.join(s.repo, 'scripts/register-ts.js'), 0o755);
    await sh(s.repo, 'commit', '-q', '-a', '-m', 'executable');
    const exec = await sh(s.repo, 'rev-parse', 'HEAD');
    expect(await sh(s.repo, 'ls-tree', exec, 'scripts/register-ts.js')).toMatch(/^100755 /);
    const wt = await createWorktree({ repo: s.repo, runId: 'x', commit: exec, root: s.root });
    const result = await commitChange({
      repo: s.repo,
      runId: 'x',
      worktree: wt.path,
      base: exec,
      files: [{ path: 'scripts/register-ts.js', content: '// new\n' }],
      message: 'm',
      identity: IDENTITY,
      date: DATE,
    });
    expect(await sh(s.repo, 'ls-tree', result.commit, 'scripts/register-ts.js')).toMatch(/^100755 /);
    expect((await lstat(path.join(wt.path, 'scripts/register-ts.js'))).mode & 0o111).not.toBe(0);
  });

  it('refuses a change whose path leaves the repository or enters .git, and writes nothing', async () => {
    for (const bad of ['../outside.ts', 'src/../../outside.ts', '.git/hooks/post-checkout', '/etc/passwd']) {
      const input = await change('bad', [
        { path: 'src/tools/sum.ts', content: NEW_SUM },
        { path: bad, content: 'x' },
      ]);
      await expect(commitChange(input)).rejects.toBeInstanceOf(UnsafePathError);
      expect(await sh(input.worktree, 'status', '--porcelain')).toBe('');
    }
    expect(await sh(s.repo, 'branch', '--list', 'forge/promote/*')).toBe('');
    await expect(lstat(path.join(s.dir, 'outside.ts'))).rejects.toThrow();
  });

  it('refuses a change that goes through a symlink out of the repository, and writes nothing', async () => {
    await symlink(s.dir, path.join(s.repo, 'src', 'escape'));
    await sh(s.repo, 'add', 'src/escape');
    await sh(s.repo, 'commit', '-q', '-m', 'a symlink out');
    const base = await sh(s.repo, 'rev-parse', 'HEAD');
    const wt = await createWorktree({ repo: s.repo, runId: 'sym', commit: base, root: s.root });
    const input = { repo: s.repo, runId: 'sym', worktree: wt.path, base, message: 'm', identity: IDENTITY, date: DATE };
    const err = await commitChange({
      ...input,
      files: [
        { path: 'src/tools/sum.ts', content: NEW_SUM },
        { path: 'src/escape/pwned.ts', content: 'x' },
      ],
    }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(UnsafePathError);
    expect(err).toMatchObject({ path: 'src/escape/pwned.ts' });
    expect((err as Error).message).toContain('out of the repository');
    await expect(lstat(path.join(s.dir, 'pwned.ts'))).rejects.toThrow();
    await expect(commitChange({ ...input, files: [{ path: 'src/escape', content: 'replace the link' }] })).rejects.toThrow('symlink');
    expect(await sh(wt.path, 'status', '--porcelain')).toBe('');
    expect(await sh(s.repo, 'branch', '--list', 'forge/promote/*')).toBe('');
  });

  it('refuses a change that changes nothing, and a path listed twice', async () => {
    const same = await readFile(path.join(s.repo, 'src/tools/sum.ts'));
    await expect(commitChange(await change('e1', [{ path: 'src/tools/sum.ts', content: same }]))).rejects.toBeInstanceOf(EmptyChangeError);
    await expect(commitChange(await change('e2', []))).rejects.toBeInstanceOf(EmptyChangeError);
    const twice = await change('e3', [
      { path: 'a.ts', content: '1' },
      { path: 'a.ts', content: '2' },
    ]);
    await expect(commitChange(twice)).rejects.toThrow('listed twice');
    expect(await sh(s.repo, 'branch', '--list', 'forge/promote/*')).toBe('');
  });

  it('refuses to reuse a run id whose branch holds another change', async () => {
    const input = await change('reuse', [{ path: 'src/tools/sum.ts', content: NEW_SUM }]);
    const first = await commitChange(input);
    await expect(commitChange({ ...input, files: [{ path: 'src/tools/sum.ts', content: '// other\n' }] })).rejects.toBeInstanceOf(RunStateConflictError);
    expect(await sh(s.repo, 'rev-parse', 'forge/promote/reuse')).toBe(first.commit);
  });
});
