import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { skippedName } from '../helpers/skip';

// eslint-disable-next-line @typescript-eslint/no-require-imports -- the reporter is the CommonJS file jest loads
const SummaryReporter = require('../helpers/summary-reporter.js') as new (config: { testNamePattern?: string }) => {
  onRunComplete(contexts: unknown, results: unknown): void;
};

const TEST_ROOT = path.resolve(__dirname, '..');
/** The one place allowed to call describe.skip / test.skip: it puts the reason in the name. */
const HELPER = path.join(TEST_ROOT, 'helpers', 'skip.ts');
/** A skip by jest's own API: `describe.skip`, `test.skip`, `it.skip` (and their `.each`), `xdescribe`, `xit`, `xtest`. */
const BARE_SKIP = /\b(?:describe|test|it)\s*\.\s*skip\b|\bx(?:describe|it|test)\s*\(/;

function testSources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const full = path.join(dir, e.name);
    if (e.isDirectory()) return e.name === 'fixtures' || e.name === 'node_modules' ? [] : testSources(full);
    return /\.(ts|js|cjs|mjs)$/.test(e.name) ? [full] : [];
  });
}

test('no test is skipped without its reason: every skip goes through test/helpers/skip.ts (describeIf / testIf)', () => {
  const bare: string[] = [];
  for (const file of testSources(TEST_ROOT)) {
    if (file === HELPER || file === __filename) continue;
    readFileSync(file, 'utf8')
      .split('\n')
      .forEach((line, i) => {
        const code = line.replace(/\/\/.*$/, '');
        if (BARE_SKIP.test(code)) bare.push(`${path.relative(TEST_ROOT, file)}:${i + 1}: ${line.trim()}`);
      });
  }
  expect(bare).toEqual([]);
});

test('the closing summary counts the skips by reason, apart from -t, and names a skip that has none', () => {
  const out = summaryOf({}, [
    { status: 'passed', fullName: 'a passes', title: 'a passes' },
    { status: 'pending', fullName: skippedName('on PostgreSQL', 'DATABASE_URL is not set') + ' case 1', title: 'case 1' },
    { status: 'pending', fullName: skippedName('on PostgreSQL', 'DATABASE_URL is not set') + ' case 2', title: 'case 2' },
    { status: 'pending', fullName: skippedName('as root', 'needs root'), title: 'as root' },
    { status: 'todo', fullName: 'corpus holds no case yet', title: 'corpus holds no case yet' },
    { status: 'pending', fullName: 'silently skipped', title: 'silently skipped' },
  ]);
  expect(out).toContain('jest: 1 passed, 0 failed, 5 skipped\n');
  expect(out).toContain('  2 skipped: DATABASE_URL is not set\n');
  expect(out).toContain('  1 skipped: needs root\n');
  expect(out).toContain('  1 skipped: to do: corpus holds no case yet\n');
  expect(out).toContain('  1 skipped WITHOUT A REASON');
  expect(out).toContain('    test/x/one.test.ts: silently skipped\n');

  // Under -t, the tests it left out are not skips that need a reason.
  const filtered = summaryOf({ testNamePattern: 'a passes' }, [
    { status: 'passed', fullName: 'a passes', title: 'a passes' },
    { status: 'pending', fullName: 'not selected', title: 'not selected' },
  ]);
  expect(filtered).toContain('  1 not run: not selected by -t\n');
  expect(filtered).not.toContain('WITHOUT A REASON');
});

function summaryOf(config: { testNamePattern?: string }, tests: { status: string; fullName: string; title: string }[]): string {
  const count = (status: string) => tests.filter((t) => t.status === status).length;
  const results = {
    numPassedTests: count('passed'),
    numFailedTests: count('failed'),
    numPendingTests: count('pending'),
    numTodoTests: count('todo'),
    testResults: [{ testFilePath: '/repo/test/x/one.test.ts', testResults: tests }],
  };
  let out = '';
  const write = jest.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
    out += chunk.toString();
    return true;
  });
  try {
    new SummaryReporter(config).onRunComplete(undefined, results);
  } finally {
    write.mockRestore();
  }
  return out;
}
