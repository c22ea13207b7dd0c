import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';

/*
 * Nothing is dropped by the split of the suite (docs/testing.md, issue 28): every test file is in exactly one of
 * `npm test` (quick), `npm run test:long` (long) and the whole chaos matrix (chaos), as jest itself lists them under
 * each FORGE_TEST_SET, and .ci/run runs all three.
 */

const root = path.resolve(__dirname, '..', '..');
const list = JSON.parse(readFileSync(path.join(root, 'test', 'long-suites.json'), 'utf8')) as Record<string, unknown>;

/** The test files jest finds with FORGE_TEST_SET=set (unset: all), repository-relative. */
function jestFiles(set: string | undefined): string[] {
  const env = { ...process.env, FORGE_TEST_SET: set ?? '' };
  const res = spawnSync(process.execPath, [path.join(root, 'node_modules', 'jest', 'bin', 'jest.js'), '--listTests'], {
    cwd: root,
    env,
    encoding: 'utf8',
    timeout: 60_000,
  });
  if (res.status !== 0) throw new Error(`jest --listTests (FORGE_TEST_SET=${set ?? ''}) exited ${res.status}: ${res.stderr}`);
  return res.stdout
    .split('\n')
    .filter(Boolean)
    .map((f) => path.relative(root, f))
    .sort();
}

test('each listed file exists, is a test file, is listed once and says why it is long', () => {
  const entries = [...Object.entries(list.long as Record<string, string>), ...Object.entries(list.chaos as Record<string, string>)];
  expect(entries.length).toBeGreaterThan(0);
  for (const [file, why] of entries) {
    expect({ file, exists: existsSync(path.join(root, file)), testFile: file.endsWith('.test.ts'), why: why.length > 10 }).toEqual({
      file,
      exists: true,
      testFile: true,
      why: true,
    });
  }
  const files = entries.map(([file]) => file);
  expect(files.filter((f, i) => files.indexOf(f) !== i)).toEqual([]);
});

test('jest puts every test file in exactly one of quick, long and chaos', () => {
  const all = jestFiles(undefined);
  const sets = { quick: jestFiles('quick'), long: jestFiles('long'), chaos: jestFiles('chaos') };
  expect(all.length).toBeGreaterThan(50);
  expect(sets.long).toEqual(Object.keys(list.long as object).sort());
  expect(sets.chaos).toEqual(Object.keys(list.chaos as object).sort());
  const counted = [...sets.quick, ...sets.long, ...sets.chaos];
  expect(all.filter((f) => counted.filter((g) => g === f).length !== 1)).toEqual([]);
  expect(counted.sort()).toEqual(all);
  expect(sets.quick).toContain('test/contract/test-sets.test.ts');
}, 120_000);

test('an unknown FORGE_TEST_SET is refused rather than running everything', () => {
  expect(() => jestFiles('quik')).toThrow(/FORGE_TEST_SET=quik: expected one of quick, long, chaos/);
}, 60_000);

test('npm test and npm run test:long run their sets, and .ci/run runs all three', () => {
  const scripts = (JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts;
  expect(scripts.test).toBe('node scripts/test.js');
  expect(scripts['test:long']).toBe('node scripts/test.js --long');
  const ci = readFileSync(path.join(root, '.ci', 'run'), 'utf8')
    .split('\n')
    .filter((line) => !line.trimStart().startsWith('#'))
    .join('\n');
  expect(ci).toMatch(/^npm test </m);
  expect(ci).toMatch(/^npm run test:long </m);
  expect(ci).toMatch(/^FORGE_TEST_SET=chaos node scripts\/test-chaos\.js </m);
});
