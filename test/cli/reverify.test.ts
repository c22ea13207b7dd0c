import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { startForgeUp, type ForgeUp } from './forge-up';
import { runForge, runForgeJson } from './run-cli';
import { projectNodeModules } from '../../src/sandbox/paths';

/**
 * `forge reverify` as an operator runs it against `forge up` (its own dev server, so the namespace-wide
 * `forge-reverify` schedule is this suite's alone): the schedule shown, paused and resumed; `--now` with a package
 * that broke under one tool (quarantined, in the JSON and the text) and the built-in repository `forge up` seeded
 * (its branch verified, every stage passing); the quarantine counted at /metrics. The tests run in order on one
 * platform (2 cores shared).
 */
let up: ForgeUp;
let home: string;
let clientEnv: NodeJS.ProcessEnv;
let metricsUrl: string;
// The package the tools import: outside FORGE_HOME, which is Forge's user's alone (issue 24), and readable by the
// sandbox's own users.
const pkg = mkdtempSync(path.join(projectNodeModules(), '.forge-cli-reverify-pkg-')); // a run reads the installed packages, nothing else of the host's
const lib = () => path.join(pkg, 'lib.mjs');

beforeAll(async () => {
  up = await startForgeUp('forge-cli-reverify-', { FORGE_REVERIFY_INTERVAL: '2h' });
  ({ home, clientEnv, metricsUrl } = up);
  chmodSync(pkg, 0o755);
  writeFileSync(lib(), 'export function scale(n) { return n * 2; }\n', { mode: 0o644 });
}, 90_000);

afterAll(async () => {
  await up?.stop();
  rmSync(pkg, { recursive: true, force: true });
});

test('forge reverify shows the schedule; --pause and --resume change it, and the text says so', async () => {
  const shown = await runForgeJson(['reverify'], { env: clientEnv });
  expect(shown.code).toBe(0);
  expect(shown.json).toMatchObject({ scheduleId: 'forge-reverify', paused: false, intervalMs: 2 * 3_600_000 });
  expect((shown.json.nextRuns as string[]).length).toBeGreaterThan(0);

  const paused = await runForgeJson(['reverify', '--pause'], { env: clientEnv });
  expect(paused).toMatchObject({ code: 0, json: { paused: true } });
  const text = await runForge(['reverify'], { env: clientEnv });
  expect(text.code).toBe(0);
  expect(text.stdout).toMatch(/^schedule forge-reverify: every 7200 s, PAUSED/m);
  expect(text.stdout).toContain('next run:  (paused)');

  const resumed = await runForgeJson(['reverify', '--resume'], { env: clientEnv });
  expect(resumed).toMatchObject({ code: 0, json: { paused: false } });
  expect((await runForge(['reverify'], { env: clientEnv })).stdout).toMatch(/^schedule forge-reverify: every 7200 s, active/m);

  const both = await runForge(['reverify', '--pause', '--resume'], { env: clientEnv });
  expect(both.code).toBe(2);
}, 60_000);

test('forge reverify --now: the tool whose package broke is quarantined, the built-in branch verified; the quarantine is counted', async () => {
  const tool = (name: string, usesPackage: boolean) => {
    const file = path.join(home, `${name}.ts`);
    writeFileSync(
      file,
      `${usesPackage ? `import { scale } from ${JSON.stringify(lib())};\n` : ''}import { z } from 'zod';
export default {
  name: '${name}',
  description: 'a tool of the forge reverify CLI test',
  inputSchema: z.object({ n: z.number() }),
  async execute({ n }: { n: number }) { return { value: ${usesPackage ? 'scale(n)' : 'n + 1'} }; },
};
`,
    );
    return file;
  };
  for (const [name, uses] of [
    ['rots_cli', true],
    ['fine_cli', false],
  ] as const) {
    const r = await runForgeJson(['deploy', tool(name, uses), '--test-input', '{"n":3}'], { env: clientEnv });
    expect(r.json).toMatchObject({ status: 'active', version: 1 });
  }
  writeFileSync(lib(), '// 2.0: scale() is now multiply()\nexport function multiply(n, by = 2) { return n * by; }\n');

  const now = await runForgeJson(['reverify', '--now'], { env: clientEnv, timeoutMs: 240_000 });
  expect(now.code).toBe(0);
  expect(now.json).toMatchObject({ quarantined: ['rots_cli'], degraded: [], counts: { tested: 2, passed: 1, failed: 1 } });
  // forge up seeded $FORGE_HOME/agent-repo from examples/agent-repo: its branch passes every stage, nothing merged.
  expect(now.json.builtin).toMatchObject({ status: 'passed', branch: 'main', repo: path.join(home, 'agent-repo') });
  expect((now.json.builtin as { stages: { name: string; status: string }[] }).stages.map((s) => s.status)).toEqual(['pass', 'pass', 'pass']);

  // The text: what the run did, and the built-in branch's line.
  const text = await runForge(['reverify', '--now'], { env: clientEnv, timeoutMs: 240_000 });
  expect(text.code).toBe(0);
  expect(text.stdout).toMatch(/^re-verified 1 tool\(s\) in 1 batch\(es\): 1 passed, 0 failed/m);
  expect(text.stdout).toMatch(/^built-in repository .*agent-repo main at [0-9a-f]{12}: PASSED \(compile pass, targetedTests pass, startupSmoke pass\)$/m);
  expect((await runForgeJson(['tools'], { env: clientEnv })).json).toMatchObject({
    tools: expect.arrayContaining([expect.objectContaining({ name: 'rots_cli', status: 'quarantined' })]),
  });

  // Workflow metrics reach the exporter through the worker's sink after the activation: poll briefly.
  let metrics = '';
  for (const deadline = Date.now() + 10_000; Date.now() < deadline && !/^forge_quarantines_total\{/m.test(metrics);) {
    metrics = await (await fetch(metricsUrl)).text();
    await new Promise((r) => setTimeout(r, 250));
  }
  expect(metrics).toMatch(/^forge_quarantines_total\{[^}]*state="quarantined"[^}]*\} 1$/m);
  expect(metrics).toMatch(/^forge_reverifications_total\{[^}]*outcome="quarantined"[^}]*\} 1$/m);
  expect(metrics).toMatch(/^forge_reverifications_total\{[^}]*outcome="passed"[^}]*\} 1$/m);
}, 600_000);
