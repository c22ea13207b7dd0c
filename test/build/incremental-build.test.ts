import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

/*
 * Issue 25, point 7: `npm start` rebuilt everything at every start, a minute of silence. scripts/build.js (npm run
 * build, and so npm start and prepare) compiles only when the sources changed and bundles the workflows only when
 * their files did, saying which. Run here on a small project of the same shape (src/, src/workflows/, the two
 * tsconfigs, node_modules), with the repository's build and bundle scripts and packages, so each step takes seconds.
 */

const ROOT = path.resolve(__dirname, '..', '..');

let dir: string;

/** Runs the build in the small project; its exit code and what it said (stderr: the [build] lines). */
function build(): { status: number | null; said: string } {
  const res = spawnSync(process.execPath, [path.join(dir, 'scripts', 'build.js')], { cwd: dir, encoding: 'utf8', timeout: 120_000 });
  return { status: res.status, said: res.stdout + res.stderr };
}

function write(rel: string, text: string): void {
  mkdirSync(path.dirname(path.join(dir, rel)), { recursive: true });
  writeFileSync(path.join(dir, rel), text);
}

beforeAll(() => {
  dir = mkdtempSync(path.join(existsSync('/dev/shm') ? '/dev/shm' : tmpdir(), 'forge-build-'));
  for (const script of ['build.js', 'bundle-workflows.js']) write(`scripts/${script}`, readFileSync(path.join(ROOT, 'scripts', script), 'utf8'));
  symlinkSync(path.join(ROOT, 'node_modules'), path.join(dir, 'node_modules'), 'dir');
  write('tsconfig.json', JSON.stringify({ compilerOptions: { target: 'ES2022', module: 'node16', strict: true, types: [], skipLibCheck: true } }));
  write(
    'tsconfig.build.json',
    JSON.stringify({
      extends: './tsconfig.json',
      compilerOptions: { rootDir: '.', outDir: 'dist', incremental: true, tsBuildInfoFile: 'dist/.tsbuildinfo' },
      include: ['src', 'bench'],
    }),
  );
  write('src/workflows/index.ts', "export { greet } from './greet';\n");
  write(
    'src/workflows/greet.ts',
    "import { salutation } from '../words';\nexport async function greet(name: string): Promise<string> {\n  return `${salutation} ${name}`;\n}\n",
  );
  write('src/words.ts', "export const salutation = 'hello';\n");
  write('src/cli.ts', "export const cli = 'not in the workflows';\n");
});

afterAll(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('npm run build (scripts/build.js)', () => {
  test('the first build compiles and bundles, and says so', () => {
    const first = build();
    expect(first).toMatchObject({ status: 0 });
    expect(first.said).toContain('[build] compiling TypeScript into dist/ (first build');
    expect(first.said).toContain('[build] bundling the workflows into dist/src/workflow-bundle.js');
    expect(existsSync(path.join(dir, 'dist', 'src', 'cli.js'))).toBe(true);
    expect(readFileSync(path.join(dir, 'dist', 'src', 'workflow-bundle.js'), 'utf8')).toContain('hello');
  }, 120_000);

  test('on an unchanged tree it compiles nothing and bundles nothing, in one line', () => {
    const again = build();
    expect(again.status).toBe(0);
    expect(again.said.trim().split('\n')).toEqual([
      expect.stringMatching(/^\[build\] dist\/ is up to date: \d+ source files and the \d+ compiled files of the workflow bundle unchanged/),
    ]);
  }, 60_000);

  test('a change outside the workflows compiles again, naming the file, and leaves the bundle alone', () => {
    write('src/cli.ts', "export const cli = 'changed';\n");
    const res = build();
    expect(res.status).toBe(0);
    expect(res.said).toContain('1 file(s) changed since the last build: src/cli.ts');
    expect(res.said).not.toContain('bundling');
    expect(readFileSync(path.join(dir, 'dist', 'src', 'cli.js'), 'utf8')).toContain("'changed'");
  }, 60_000);

  test('a change to a file the workflows import compiles and bundles again', () => {
    write('src/words.ts', "export const salutation = 'bonjour';\n");
    const res = build();
    expect(res.status).toBe(0);
    expect(res.said).toContain('src/words.ts');
    expect(res.said).toContain('bundling the workflows into dist/src/workflow-bundle.js (their code changed)');
    expect(readFileSync(path.join(dir, 'dist', 'src', 'workflow-bundle.js'), 'utf8')).toContain('bonjour');
  }, 120_000);

  test('a compiled file removed from dist/ is compiled again, though no source changed', () => {
    rmSync(path.join(dir, 'dist', 'src', 'cli.js'));
    const res = build();
    expect(res.status).toBe(0);
    expect(res.said).toContain('compiled file(s) missing from dist/');
    expect(existsSync(path.join(dir, 'dist', 'src', 'cli.js'))).toBe(true);
  }, 60_000);

  test('a type error fails the build, and the next build compiles again once it is fixed', () => {
    write('src/cli.ts', 'export const cli: number = "not a number";\n');
    const broken = build();
    expect(broken.status).not.toBe(0);
    expect(broken.said).toContain('TS2322');
    write('src/cli.ts', "export const cli = 'fixed';\n");
    const fixed = build();
    expect(fixed.status).toBe(0);
    expect(fixed.said).toContain('compiling TypeScript');
    expect(build().said).toContain('dist/ is up to date');
  }, 120_000);
});

describe('bin/forge.js before a build', () => {
  test('says to run npm run build instead of failing with Cannot find module', () => {
    const checkout = mkdtempSync(path.join(tmpdir(), 'forge-unbuilt-'));
    try {
      mkdirSync(path.join(checkout, 'bin'));
      copyFileSync(path.join(ROOT, 'bin', 'forge.js'), path.join(checkout, 'bin', 'forge.js'));
      const res = spawnSync(process.execPath, [path.join(checkout, 'bin', 'forge.js'), 'tools'], { encoding: 'utf8' });
      expect(res.status).toBe(1);
      expect(res.stderr).toBe(`forge: Forge is not built yet (no dist/src/cli.js in ${checkout}): run \`npm run build\` there first (npm start builds too).\n`);
    } finally {
      rmSync(checkout, { recursive: true, force: true });
    }
  });
});
