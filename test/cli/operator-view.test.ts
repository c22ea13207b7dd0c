import { createServer } from 'node:net';
import path from 'node:path';
import { startForgeUp, type ForgeUp } from './forge-up';
import { cliEnv, runForge, runForgeJson, TOOL_FIXTURES } from './run-cli';

/**
 * What an operator sees of a running `forge up`: its terminal (one line per run outcome, no stack for a verdict),
 * `forge runs`, and the Prometheus endpoint at FORGE_METRICS_ADDRESS.
 * One platform for the whole suite (2 cores shared): the tests run in order on it.
 */
let up: ForgeUp;
let home: string;
let clientEnv: NodeJS.ProcessEnv;
let metricsUrl: string;

beforeAll(async () => {
  up = await startForgeUp('forge-operator-test-');
  ({ home, clientEnv, metricsUrl } = up);
}, 90_000);

afterAll(() => up?.stop());

/** Waits until forge up's stderr has a line matching `pattern` (the outcome line is logged as the run ends). */
async function stderrLine(pattern: RegExp, ms = 10_000): Promise<string> {
  const deadline = Date.now() + ms;
  for (;;) {
    const line = up
      .stderr()
      .split('\n')
      .find((l) => pattern.test(l));
    if (line) return line;
    if (Date.now() > deadline) throw new Error(`no stderr line matches ${pattern}:\n${up.stderr()}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

test('a rejected deployment is one line in the forge up terminal, with no stack; a good one is one line too', async () => {
  const rejected = await runForgeJson(['deploy', path.join(TOOL_FIXTURES, 'throws.ts'), '--test-input', '{}'], { env: clientEnv });
  expect(rejected.code).toBe(1);
  expect(rejected.json).toMatchObject({ status: 'rejected', diagnostics: { stage: 'test' } });
  const workflowId = rejected.json.workflowId as string;
  const verdict = rejected.json.verdict as string;

  const line = await stderrLine(new RegExp(`^forge: ${escape(workflowId)} `));
  expect(line).toMatch(new RegExp(`^forge: ${escape(workflowId)} rejected at test \\(${verdict}\\): .+`));
  expect(
    up
      .stderr()
      .split('\n')
      .filter((l) => l.includes(workflowId)),
  ).toEqual([line]);

  const good = await runForgeJson(['deploy', path.join(TOOL_FIXTURES, 'celsius_to_fahrenheit.ts'), '--test-input', '{"celsius":100}'], { env: clientEnv });
  expect(good.json).toMatchObject({ status: 'active', version: 1 });
  expect(await stderrLine(new RegExp(`^forge: ${escape(good.json.workflowId as string)} `))).toContain(' active: v1 of celsius_to_fahrenheit is active');

  // The SDK's "Activity failed" warning and its stack are gone: a verdict is not a fault.
  expect(up.stderr()).not.toContain('Activity failed');
  expect(up.stderr()).not.toContain('Workflow failed');
  expect(up.stderr()).not.toMatch(/\n\s+at /);
}, 60_000);

test("/metrics: Temporal's runtime metrics and Forge's counters by outcome, verdicts by status, stage durations", async () => {
  expect(up.stderr()).toContain(`forge: Prometheus metrics at ${metricsUrl}`);
  // Workflow metrics reach the exporter through the worker's sink after the activation: poll briefly.
  let text = '';
  const deadline = Date.now() + 10_000;
  while (!/^forge_deployments_total\{[^}]*outcome="active"/m.test(text) && Date.now() < deadline) {
    const res = await fetch(metricsUrl);
    expect(res.status).toBe(200);
    text = await res.text();
    if (!text.includes('forge_deployments_total')) await new Promise((r) => setTimeout(r, 250));
  }
  expect(text).toMatch(/^temporal_workflow_completed\{[^}]*\} \d+/m);
  // The deployments' steps are local activities (their tests too, with a free sandbox slot: FORGE_SANDBOX_TEST_HERE).
  expect(text).toMatch(/^temporal_local_activity_execution_latency_bucket\{/m);
  expect(text).toMatch(/^forge_deployments_total\{[^}]*outcome="rejected"[^}]*\} 1$/m);
  expect(text).toMatch(/^forge_deployments_total\{[^}]*outcome="active"[^}]*\} 1$/m);
  expect(text).toMatch(/^forge_sandbox_verdicts_total\{[^}]*status="passed"[^}]*\} 1$/m);
  expect(text).toMatch(/^forge_stage_duration_ms_bucket\{[^}]*kind="deploy"[^}]*stage="test"[^}]*status="done"/m);
  // A verdict is not a failed activity in Temporal's metrics (BENIGN).
  expect(text).not.toMatch(/^temporal_(local_)?activity_execution_failed\{[^}]*activity_type="testTool(Here)?"/m);
});

test('forge worker with FORGE_METRICS_ADDRESS on a taken port: one sentence naming the variable, exit 2', async () => {
  const blocker = createServer();
  const port = await new Promise<number>((resolve) => blocker.listen(0, '127.0.0.1', () => resolve((blocker.address() as { port: number }).port)));
  try {
    const r = await runForge(['worker'], {
      env: cliEnv({ FORGE_HOME: home, FORGE_METRICS_ADDRESS: `127.0.0.1:${port}`, TEMPORAL_ADDRESS: '127.0.0.1:1' }),
      timeoutMs: 30_000,
    });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(`forge: FORGE_METRICS_ADDRESS=127.0.0.1:${port} cannot serve metrics: Address already in use`);
    expect(r.stderr).not.toMatch(/\n\s+at /);
  } finally {
    blocker.close();
  }
});

function escape(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
}

test('forge runs: outcome always filled, --kind and --status filter, the table fits 80 columns', async () => {
  const all = await runForgeJson(['runs', '--kind', 'deploy'], { env: clientEnv });
  expect(all.code).toBe(0);
  const runs = all.json.runs as { workflowId: string; kind: string; status: string; outcome: string }[];
  expect(runs.map((r) => [r.workflowId.split('/')[1], r.status, r.outcome]).sort()).toEqual([
    ['celsius_to_fahrenheit', 'COMPLETED', 'active'],
    // A refusal ends the run FAILED (src/workflows/refusal.ts): the Web UI's list and --status tell it at a glance.
    ['throws', 'FAILED', 'rejected'],
  ]);
  const failed = (await runForgeJson(['runs', '--status', 'failed'], { env: clientEnv })).json.runs as { workflowId: string }[];
  expect(failed.map((r) => r.workflowId.split('/')[1])).toEqual(['throws']);
  expect((await runForgeJson(['runs', '--status', 'completed', '--kind', 'deploy'], { env: clientEnv })).json.runs).toHaveLength(1);
  expect((await runForgeJson(['runs', '--kind', 'migrate'], { env: clientEnv })).json).toEqual({ runs: [] });

  const human = await runForge(['runs'], { env: clientEnv });
  expect(human.code).toBe(0);
  const lines = human.stdout.trimEnd().split('\n');
  expect(lines[0]).toMatch(/^STARTED\s+OUTCOME\s+TOOK\s+WORKFLOW ID$/);
  expect(lines).toHaveLength(3);
  for (const line of lines) expect(line.length).toBeLessThanOrEqual(80);
  expect(
    lines
      .slice(1)
      .map((l) => l.split(/\s{2,}/)[1])
      .sort(),
  ).toEqual(['active', 'rejected']);
}, 60_000);
