import { mkdir, mkdtemp, readdir, readFile, rm, stat, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { UnsafePathError, assertSafeRelativePath, checkProposedPath, writeProposedFile } from '../../src/git';

let dir: string;
let repo: string;
let outside: string;

beforeEach(async () => {
  dir = await mkdtemp(path.join(process.platform === 'linux' ? '/dev/shm' : '/tmp', 'forge-paths-'));
  repo = path.join(dir, 'repo');
  outside = path.join(dir, 'outside');
  await mkdir(path.join(repo, 'src', 'tools'), { recursive: true });
  await mkdir(outside);
  await writeFile(path.join(repo, 'src', 'tools', 'sum.ts'), 'old');
  await writeFile(path.join(outside, 'secret.ts'), 'secret');
});

afterEach(() => rm(dir, { recursive: true, force: true }));

function reasonOf(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(UnsafePathError);
    return (err as UnsafePathError).reason;
  }
  throw new Error('accepted');
}

async function refusal(p: Promise<unknown>): Promise<UnsafePathError> {
  const err = await p.then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(UnsafePathError);
  return err as UnsafePathError;
}

describe('the text of a proposed path', () => {
  it.each([
    ['../etc/passwd', '".."'],
    ['src/../../x.ts', '".."'],
    ['/etc/passwd', 'absolute'],
    ['.git/config', '.git'],
    ['src/.GIT/hooks/x', '.git'],
    ['.git./config', '.git'],
    ['src//x.ts', 'empty'],
    ['./src/x.ts', 'empty or "."'],
    ['src/x.ts/', 'empty'],
    ['src\\x.ts', '\\'],
    ['-rf', '"-"'],
    ['src/a\nb.ts', 'control'],
    ['', 'non-empty'],
  ])('refuses %j, saying why', (p, why) => {
    expect(reasonOf(() => assertSafeRelativePath(p))).toContain(why);
  });

  it('accepts plain relative paths, also with spaces and dots inside names', () => {
    for (const p of ['src/tools/sum.ts', 'a b/c..d.ts', '.gitignore', 'src/.github/x.yml', 'src/-x.ts']) {
      expect(() => assertSafeRelativePath(p)).not.toThrow();
    }
  });

  it('names the path in the error', () => {
    expect(() => assertSafeRelativePath('../x')).toThrow('The path "../x" is refused');
  });
});

describe('the path on the file system', () => {
  it('refuses a symlinked directory that leads out of the repository, and writes nothing there', async () => {
    await symlink(outside, path.join(repo, 'src', 'escape'));
    const err = await refusal(writeProposedFile(repo, 'src/escape/secret.ts', 'pwned'));
    expect(err.path).toBe('src/escape/secret.ts');
    expect(err.reason).toMatch(/goes through the symlink src\/escape .*out of the repository/);
    expect(await readFile(path.join(outside, 'secret.ts'), 'utf8')).toBe('secret');
    await refusal(writeProposedFile(repo, 'src/escape/new.ts', 'pwned'));
    await expect(stat(path.join(outside, 'new.ts'))).rejects.toThrow();
  });

  it('refuses a symlink as the last component, without following or replacing it', async () => {
    await symlink(path.join(outside, 'secret.ts'), path.join(repo, 'src', 'tools', 'link.ts'));
    const err = await refusal(writeProposedFile(repo, 'src/tools/link.ts', 'pwned'));
    expect(err.reason).toContain('it is a symlink');
    expect(await readFile(path.join(outside, 'secret.ts'), 'utf8')).toBe('secret');
  });

  it('refuses a symlink that stays inside the repository too (git would record another path)', async () => {
    await symlink('tools', path.join(repo, 'src', 'alias'));
    expect((await refusal(checkProposedPath(repo, 'src/alias/sum.ts'))).reason).toContain('name the real path');
  });

  it('refuses writing over a directory or beneath a file', async () => {
    expect((await refusal(checkProposedPath(repo, 'src/tools'))).reason).toBe('it is a directory');
    expect((await refusal(checkProposedPath(repo, 'src/tools/sum.ts/x.ts'))).reason).toBe('src/tools/sum.ts is a file, not a directory');
  });

  it('writes a file in place, creating missing directories, and leaves no temp file', async () => {
    await writeProposedFile(repo, 'src/tools/sum.ts', 'new');
    await writeProposedFile(repo, 'src/tools/deep/er/x.ts', 'x');
    await writeProposedFile(repo, 'src/tools/deep/er/x.ts', 'x');
    expect(await readFile(path.join(repo, 'src/tools/sum.ts'), 'utf8')).toBe('new');
    expect(await readFile(path.join(repo, 'src/tools/deep/er/x.ts'), 'utf8')).toBe('x');
    expect((await readdir(path.join(repo, 'src/tools'))).sort()).toEqual(['deep', 'sum.ts']);
  });

  it('checks against the root given through a symlink by its real path', async () => {
    const viaLink = path.join(dir, 'repo-link');
    await symlink(repo, viaLink);
    const info = await checkProposedPath(viaLink, 'src/tools/sum.ts');
    expect(info).toEqual({ absolute: path.join(repo, 'src/tools/sum.ts'), exists: true, executable: false });
  });
});
