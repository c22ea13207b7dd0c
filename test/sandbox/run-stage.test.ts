import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { StageReport } from '../../src/contract/promotion-runs';
import { commitChange, createWorktree, linkNodeModules, planStages, readVerifyPlan, type PlannedStage, type ProposedFile } from '../../src/git';
import { runStage, verdictOf, type RunStageOptions } from '../../src/sandbox/run-stage';
import { MAX_STAGE_LOCATIONS, parseLocations } from '../../src/sandbox/stage-locations';
import { DATE, EXAMPLE_REPO, FORGE_NODE_MODULES, IDENTITY, agentRepo, type Sandbox } from '../git/fixture';
import { processesMarkedWith } from '../helpers/processes';

// The stage runner on fresh copies of examples/agent-repo, running the real commands its forge.verify.json plans for
// each change (through planStages), in a worktree made by src/git with Forge's node_modules linked in. Limits are
// lowered here (through the planned command's own timeoutMs and memoryMb) rather than waited for.

jest.setTimeout(60_000);

const MiB = 1024 * 1024;
const DEFAULTS: RunStageOptions['defaults'] = { timeoutMs: 60_000, memoryMb: 1024, outputBytes: 4 * MiB };
const exampleFile = (rel: string) => readFileSync(path.join(EXAMPLE_REPO, rel), 'utf8');

// Every stage's private directories go here, so that "nothing is left" can be checked exactly.
const tmpRoot = mkdtempSync(path.join(existsSync('/dev/shm') ? '/dev/shm' : tmpdir(), 'forge-run-stage-test-'));
afterAll(() => rmSync(tmpRoot, { recursive: true, force: true }));

// A fresh copy of the example repository for each test that proposes a change.
let s: Sandbox | undefined;
afterEach(async () => {
  expect(readdirSync(tmpRoot)).toEqual([]);
  await s?.dispose();
  s = undefined;
});

/** The change committed in a fresh worktree of main, as a promotion would make it; the stages its plan gives it. */
async function propose(files: ProposedFile[]): Promise<{ worktree: string; stages: PlannedStage[] }> {
  s ??= await agentRepo();
  const runId = `run-${randomBytes(4).toString('hex')}`;
  const paths = files.map((f) => f.path);
  const stages = planStages(await readVerifyPlan(s.repo, s.base), paths);
  const wt = await createWorktree({ repo: s.repo, runId, commit: s.base, root: s.root });
  const deps = await linkNodeModules({ repo: s.repo, worktree: wt.path, changedPaths: paths, nodeModules: FORGE_NODE_MODULES });
  expect(deps.status).toBe('linked');
  await commitChange({ repo: s.repo, runId, worktree: wt.path, base: s.base, files, message: 'agent change', identity: IDENTITY, date: DATE });
  return { worktree: wt.path, stages };
}

const stageOf = (stages: PlannedStage[], name: PlannedStage['name']): PlannedStage => stages.find((st) => st.name === name)!;

/** Runs one stage with a fresh marker in its environment; afterwards no process carrying it may be alive. */
async function run(stage: PlannedStage, worktree: string, extra: Partial<RunStageOptions> = {}): Promise<StageReport> {
  const marker = `forge-stage-test-${randomBytes(6).toString('hex')}`;
  const report = await runStage(stage, { worktree, defaults: DEFAULTS, tmpDir: tmpRoot, ...extra, env: { FORGE_TEST_MARKER: marker, ...extra.env } });
  expect(processesMarkedWith(marker)).toEqual([]);
  return report;
}

test('a good change passes compile, targeted tests and the startup smoke, with the plan commands, exit codes and resources', async () => {
  const changed = exampleFile('src/tools/sum.ts').replace(
    '/** Adds finite numbers; the sum of nothing is 0. */',
    '/** Adds finite numbers (the sum of nothing is 0). */',
  );
  const { worktree, stages } = await propose([{ path: 'src/tools/sum.ts', content: changed }]);
  const beats: number[] = [];
  const reports: StageReport[] = [];
  for (const stage of stages) reports.push(await run(stage, worktree, { onHeartbeat: () => beats.push(Date.now()) }));
  expect(reports.map((r) => [r.name, r.status])).toEqual([
    ['compile', 'pass'],
    ['targetedTests', 'pass'],
    ['startupSmoke', 'pass'],
  ]);
  for (const r of reports) {
    expect(r).toMatchObject({ cwd: worktree, exitCode: 0 });
    expect(r.reason).toBeUndefined();
    expect(r.locations).toBeUndefined();
    expect(r.commands).toHaveLength(1);
    expect(r.resource.maxRssBytes).toBeGreaterThan(10 * MiB);
    expect(r.resource.cpuUserMicros).toBeGreaterThan(0);
    expect(r.durationMs).toBeGreaterThan(0);
  }
  expect(reports[0].command).toEqual(['node', 'node_modules/typescript/bin/tsc', '--noEmit', '-p', '.']);
  expect(reports[1].command).toEqual(['node', 'node_modules/jest/bin/jest.js', '--ci', '--findRelatedTests', '--', 'src/tools/sum.ts']);
  expect(reports[1].stderrTail).toMatch(/PASS src\/tools\/sum\.test\.ts/);
  expect(reports[2].stdoutTail).toMatch(/^startup-smoke ok: 4 tools/);
  // runContainedProcess beats once a second while a command runs: at least one beat per whole second of each stage
  // (on a quiet machine every stage can end within its first second, and then none is due).
  expect(beats.length).toBeGreaterThanOrEqual(reports.reduce((n, r) => n + Math.max(0, Math.floor(r.durationMs / 1000) - 1), 0));
});

test('each command sees exactly its environment: node first on PATH, a private HOME, CI, NODE_ENV and the extra variables', async () => {
  const stage: PlannedStage = {
    name: 'startupSmoke',
    commands: [
      {
        stage: 'startupSmoke',
        rule: 0,
        argv: ['node', '-e', 'const fs = require("fs"); console.log(JSON.stringify({ env: process.env, home: fs.statSync(process.env.HOME).isDirectory() }))'],
        matched: [],
      },
    ],
  };
  const report = await run(stage, tmpRoot, { env: { EXTRA: 'yes' } });
  expect(report.status).toBe('pass');
  const { env, home } = JSON.parse(report.stdoutTail) as { env: Record<string, string>; home: boolean };
  expect(Object.keys(env).sort()).toEqual(['CI', 'EXTRA', 'FORGE_SANDBOX_RUN', 'FORGE_TEST_MARKER', 'HOME', 'NODE_ENV', 'PATH', 'TMPDIR']);
  expect(env).toMatchObject({ CI: 'true', NODE_ENV: 'test', EXTRA: 'yes', PATH: `${path.dirname(process.execPath)}:/usr/local/bin:/usr/bin:/bin` });
  expect(home).toBe(true);
  expect(env.HOME.startsWith(tmpRoot)).toBe(true);
  expect(env.TMPDIR).not.toBe(env.HOME);
  expect(existsSync(env.HOME)).toBe(false); // removed with the stage
});

test('a type error fails compile with the file:line:col tsc printed', async () => {
  const broken = exampleFile('src/tools/sum.ts').replace(
    'return values.reduce((total, v) => total + v, 0);',
    "const total: number = 'zero';\n  return values.reduce((t, v) => t + v, total);",
  );
  const { worktree, stages } = await propose([{ path: 'src/tools/sum.ts', content: broken }]);
  const report = await run(stageOf(stages, 'compile'), worktree);
  expect(report).toMatchObject({ name: 'compile', status: 'fail', exitCode: 2 });
  expect(report.reason).toMatch(/exited with code 2/);
  expect(report.locations).toEqual([
    { file: 'src/tools/sum.ts', line: 5, column: 9, message: expect.stringMatching(/^error TS2322: Type 'string' is not assignable to type 'number'/) },
  ]);
  expect(report.stdoutTail).toMatch(/src\/tools\/sum\.ts\(5,9\): error TS2322/);
});

test("a failing assertion fails the targeted tests with the test file's location", async () => {
  const broken = exampleFile('src/tools/sum.test.ts').replace('expect(sum([1, 2, 3])).toBe(6);', 'expect(sum([1, 2, 3])).toBe(7);');
  const { worktree, stages } = await propose([{ path: 'src/tools/sum.test.ts', content: broken }]);
  const report = await run(stageOf(stages, 'targetedTests'), worktree);
  expect(report).toMatchObject({ name: 'targetedTests', status: 'fail', exitCode: 1 });
  expect(report.command.at(-1)).toBe('src/tools/sum.test.ts');
  expect(report.locations).toEqual([
    { file: 'src/tools/sum.test.ts', line: 5, column: 28, message: 'sum › adds numbers: expect(received).toBe(expected) // Object.is equality' },
  ]);
  expect(report.stderrTail).toMatch(/Tests:\s+1 failed, 2 passed/);
});

test('a hanging test times out, and no process of its tree is left (a detached child included)', async () => {
  const hang = `import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { sum } from './sum';

it('never ends', () => {
  spawn('sleep', ['1000'], { detached: true, stdio: 'ignore' }).unref();
  writeFileSync(path.join(__dirname, '..', '..', 'hang-started'), String(sum([1])));
  return new Promise(() => undefined);
}, 1_000_000);
`;
  const { worktree, stages } = await propose([{ path: 'src/tools/hang.test.ts', content: hang }]);
  const stage = stageOf(stages, 'targetedTests');
  stage.commands[0].timeoutMs = 8_000; // lowered from the plan's 180 s
  const started = Date.now();
  const report = await run(stage, worktree);
  expect(Date.now() - started).toBeLessThan(20_000);
  expect(existsSync(path.join(worktree, 'hang-started'))).toBe(true); // the test really ran, and hung
  expect(report).toMatchObject({ name: 'targetedTests', status: 'timeout', exitCode: null });
  expect(report.reason).toMatch(/still running at its time limit of 8000 ms \(timeoutMs\)/);
});

test('a test whose jest worker eats memory past memoryMb fails with a memory reason, the whole tree counted', async () => {
  // Two test files and two workers: jest runs them in worker processes, not in its own.
  const config = exampleFile('jest.config.js').replace("testEnvironment: 'node',", "testEnvironment: 'node',\n  maxWorkers: 2,");
  const hog = `import { writeFileSync } from 'node:fs';
import path from 'node:path';

it('eats memory', async () => {
  writeFileSync(path.join(__dirname, '..', '..', 'hog-process'), process.argv[1]);
  const kept: Buffer[] = [];
  for (let i = 0; i < 128; i++) {
    kept.push(Buffer.alloc(32 * 1024 * 1024, 1));
    await new Promise((r) => setTimeout(r, 5));
  }
  expect(kept.length).toBe(128);
});
`;
  const other = `it('is quick', () => expect(1 + 1).toBe(2));\n`;
  const { worktree, stages } = await propose([
    { path: 'jest.config.js', content: config },
    { path: 'src/tools/hog.test.ts', content: hog },
    { path: 'src/tools/quick.test.ts', content: other },
  ]);
  const stage = stageOf(stages, 'targetedTests');
  expect(stage.commands.map((c) => c.argv.slice(2))).toEqual([
    ['--ci', '--findRelatedTests', '--', 'src/tools/hog.test.ts', 'src/tools/quick.test.ts'],
    ['--ci'],
  ]);
  stage.commands[0].memoryMb = 768; // lowered from the plan's 2048
  const report = await run(stage, worktree);
  expect(readFileSync(path.join(worktree, 'hog-process'), 'utf8')).toMatch(/jest-worker/); // a worker, not jest itself
  expect(report).toMatchObject({ name: 'targetedTests', status: 'fail', exitCode: null });
  expect(report.reason).toMatch(/memory limit of 768 MiB \(memoryMb\) for its whole process tree/);
  expect(report.commands).toHaveLength(1); // the second command never ran
  expect(report.resource.maxRssBytes).toBeGreaterThan(0);
});

test('a test that floods its output is stopped at the output limit, and the report keeps a bounded tail', async () => {
  // Straight to fd 1 as fast as the pipe takes it (fd 1 is non-blocking under Node: EAGAIN means "full, try again").
  // process.stdout would not do: inside jest it queues the writes in memory and the test ends before they are out.
  const flood = `import { writeSync } from 'node:fs';

it('floods', () => {
  const line = Buffer.from('flood '.repeat(170) + '\\n');
  for (let i = 0; i < 1_000_000; i++) {
    for (let done = 0; done < line.length; ) {
      try {
        done += writeSync(1, line, done);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'EAGAIN') throw err;
      }
    }
  }
}, 1_000_000);
`;
  const { worktree, stages } = await propose([{ path: 'src/tools/flood.test.ts', content: flood }]);
  const report = await run(stageOf(stages, 'targetedTests'), worktree, { defaults: { ...DEFAULTS, outputBytes: 2 * MiB } });
  expect(report).toMatchObject({ name: 'targetedTests', status: 'fail', exitCode: null });
  expect(report.reason).toMatch(/output limit of 2097152 bytes/);
  expect(report.stdoutTail).toMatch(/flood flood/);
  expect(Buffer.byteLength(report.stdoutTail)).toBeLessThan(16 * 1024);
});

test('an unknown command is an error, and nothing after it runs', async () => {
  const stage: PlannedStage = {
    name: 'compile',
    commands: [
      { stage: 'compile', rule: 0, argv: ['forge-no-such-command', '--noEmit'], matched: ['src/a.ts'] },
      { stage: 'compile', rule: 1, argv: ['node', '-e', ''], matched: ['src/a.ts'] },
    ],
  };
  const report = await run(stage, tmpRoot);
  expect(report).toMatchObject({ name: 'compile', status: 'error', exitCode: null, command: ['forge-no-such-command', '--noEmit'] });
  expect(report.reason).toMatch(/`forge-no-such-command --noEmit` could not be started: .*not found on PATH/);
  expect(report.commands).toHaveLength(1);
});

test('a stage stops at its first command that does not pass; a stage without commands is skipped', async () => {
  const cmd = (script: string) => ({ stage: 'startupSmoke' as const, rule: 0, argv: ['node', '-e', script], matched: [] });
  const report = await run({ name: 'startupSmoke', commands: [cmd('console.log("one")'), cmd('process.exit(3)'), cmd('console.log("three")')] }, tmpRoot);
  expect(report).toMatchObject({ status: 'fail', exitCode: 3, command: ['node', '-e', 'process.exit(3)'] });
  expect(report.commands!.map((c) => [c.status, c.exitCode])).toEqual([
    ['pass', 0],
    ['fail', 3],
  ]);
  const skipped = await run({ name: 'compile', commands: [] }, tmpRoot);
  expect(skipped).toMatchObject({ name: 'compile', status: 'skipped', command: [], exitCode: null });
});

test('a cancelled stage is an error and kills its tree', async () => {
  const controller = new AbortController();
  const stage: PlannedStage = { name: 'compile', commands: [{ stage: 'compile', rule: 0, argv: ['sleep', '30'], matched: [] }] };
  setTimeout(() => controller.abort(), 300);
  const report = await run(stage, tmpRoot, { signal: controller.signal });
  expect(report.status).toBe('error');
  expect(report.reason).toMatch(/cancelled/);
  expect(report.durationMs).toBeLessThan(10_000);
});

describe('outcomes map to statuses, failing closed', () => {
  const limits = { timeoutMs: 1000, memoryMb: 64, outputBytes: 100 };
  const argv = ['x'];
  it.each([
    [{ outcome: 'exited', exitCode: 0, signal: null }, 'pass'],
    [{ outcome: 'exited', exitCode: 1, signal: null }, 'fail'],
    [{ outcome: 'exited', exitCode: null, signal: 'SIGSEGV' }, 'fail'],
    [{ outcome: 'exited', exitCode: null, signal: null }, 'error'],
    [{ outcome: 'timeout', exitCode: null, signal: null }, 'timeout'],
    [{ outcome: 'oom', exitCode: null, signal: null }, 'fail'],
    [{ outcome: 'output-limit', exitCode: null, signal: null }, 'fail'],
    [{ outcome: 'killed', exitCode: null, signal: null }, 'error'],
    [{ outcome: 'spawn-error', exitCode: null, signal: null }, 'error'],
    [{ outcome: 'something-new', exitCode: 0, signal: null }, 'error'],
  ] as const)('%j → %s', (result, status) => {
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    const verdict = verdictOf(result as any, argv, limits);
    expect(verdict.status).toBe(status);
    if (status !== 'pass') expect(verdict.reason).toMatch(/^`x` /);
  });
});

describe('locations out of tool output', () => {
  const wt = '/dev/shm/wt';
  it('reads both tsc formats, colours stripped', () => {
    const out = [
      "src/a.ts(3,7): error TS2322: Type 'string' is not assignable to type 'number'.",
      "\u001b[96msrc/b.ts\u001b[0m:\u001b[93m10\u001b[0m:\u001b[93m2\u001b[0m - \u001b[91merror\u001b[0m\u001b[90m TS2304: \u001b[0mCannot find name 'x'.",
      '../outside.ts(1,1): error TS1000: outside the worktree',
      'node_modules/@types/x/index.d.ts(1,1): error TS1000: a dependency',
    ].join('\n');
    expect(parseLocations(out, wt)).toEqual([
      { file: 'src/a.ts', line: 3, column: 7, message: "error TS2322: Type 'string' is not assignable to type 'number'." },
      { file: 'src/b.ts', line: 10, column: 2, message: "error TS2304: Cannot find name 'x'." },
    ]);
  });

  it("reads jest's blocks: the first frame in the worktree, absolute or relative, each place once", () => {
    const block = (title: string, frame: string) =>
      [
        `  ● ${title}`,
        '',
        '    TypeError: boom',
        '',
        '      at fn (/dev/shm/wt/node_modules/lib/index.js:1:1)',
        `      at Object.<anonymous> (${frame})`,
        '      at next (src/later.ts:9:9)',
        '',
      ].join('\n');
    const out = [
      block('a › one', '/dev/shm/wt/src/a.test.ts:4:5'),
      block('a › two', 'src/a.test.ts:8:3'),
      'Summary of all failing tests',
      block('a › one', '/dev/shm/wt/src/a.test.ts:4:5'),
    ].join('\n');
    expect(parseLocations(out, wt)).toEqual([
      { file: 'src/a.test.ts', line: 4, column: 5, message: 'a › one: TypeError: boom' },
      { file: 'src/a.test.ts', line: 8, column: 3, message: 'a › two: TypeError: boom' },
    ]);
  });

  it("reads an uncaught error's first frame in the worktree (a crashed startup smoke), and keeps at most the first 20", () => {
    const crash = [
      '/dev/shm/wt/src/main.ts:3',
      '    throw new Error("no")',
      '',
      'Error: no',
      '    at Object.<anonymous> (/dev/shm/wt/src/main.ts:3:11)',
      '    at Module._compile (node:internal/modules/cjs/loader:1554:14)',
    ].join('\n');
    expect(parseLocations(crash, wt)).toEqual([{ file: 'src/main.ts', line: 3, column: 11, message: 'Error: no' }]);
    const many = Array.from({ length: 50 }, (_, i) => `src/a.ts(${i + 1},1): error TS1: e${i}`).join('\n');
    expect(parseLocations(many, wt)).toHaveLength(MAX_STAGE_LOCATIONS);
  });
});
