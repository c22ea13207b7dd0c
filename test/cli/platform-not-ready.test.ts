import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { ForgeKindKey, ForgeOutcomeKey, ForgeSubjectKey } from '../../src/contract/search-attributes';
import { requireTemporalBinary } from '../../src/platform/temporal-binary';
import { startTemporal, startTestPlatform, type TestPlatform } from '../helpers/platform';
import { cliEnv, parseJsonStdout, ROOT, runCommand, runForge, runForgeJson, TOOL_FIXTURES } from './run-cli';

/**
 * A Temporal that Forge cannot run on yet, through the real binary (issue 25, points 3 and 6): first one that lacks
 * the ForgeStage search attribute (a server `forge up` did not set up), then, once the command the CLI printed has
 * registered it, one where no Forge worker polls. Every command says what is missing and what fixes it, exits 3, and
 * never prints a stack; with --wait it waits until a worker comes.
 */

let env: TestWorkflowEnvironment;
let dir: string;
let childEnv: NodeJS.ProcessEnv;
let platform: TestPlatform | undefined;
const suffix = randomBytes(4).toString('hex');
const queues = {
  FORGE_TASK_QUEUE_CONTROL: `forge-control-${suffix}`,
  FORGE_TASK_QUEUE_SANDBOX: `forge-sandbox-${suffix}`,
  FORGE_TASK_QUEUE_PROMOTE: `forge-promote-${suffix}`,
};
const tool = path.join(TOOL_FIXTURES, 'celsius_to_fahrenheit.ts');
const migration = path.join(ROOT, 'examples', 'agent_notes.sql');
const STACK = /\n\s+at /;
/** The check gives up after ~4 s; the rest is room for node's start-up on a loaded machine, far from a hang. */
const SECONDS_NOT_FOREVER = 20_000;

beforeAll(async () => {
  // Three of Forge's four search attributes: ForgeStage is not registered.
  env = await startTemporal({ searchAttributes: [ForgeKindKey, ForgeSubjectKey, ForgeOutcomeKey] });
  dir = mkdtempSync(path.join(existsSync('/dev/shm') ? '/dev/shm' : tmpdir(), 'forge-cli-not-ready-'));
  childEnv = cliEnv({
    TEMPORAL_ADDRESS: env.connection.options.address,
    TEMPORAL_NAMESPACE: 'default',
    FORGE_HOME: path.join(dir, 'home'),
    FORGE_AGENT_TOOLS_DIR: path.join(dir, 'agent-tools'),
    ...queues,
  });
}, 120_000);

afterAll(async () => {
  await platform?.teardown();
  await env?.teardown();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

test('a missing search attribute: deploy and migrate name it and the command that registers it, exit 3, no stack; that command fixes it', async () => {
  const address = env.connection.options.address;
  const register = `temporal operator search-attribute create --address ${address} --namespace default --name ForgeStage --type Keyword`;

  const deploy = await runForgeJson(['deploy', tool, '--test-input', '{"celsius":1}'], { env: childEnv });
  expect(deploy.code).toBe(3);
  expect(deploy.json).toEqual({
    error: expect.stringContaining('has no search attribute ForgeStage'),
    type: 'SearchAttributesMissingError',
    namespace: 'default',
    missing: [{ name: 'ForgeStage', type: 'Keyword' }],
    commands: [register],
  });
  expect(deploy.json.error).toContain(register);
  expect(deploy.stderr).not.toMatch(STACK);

  const migrate = await runForge(['migrate', '--name', 'agent_notes', migration], { env: childEnv });
  expect(migrate.code).toBe(3);
  expect(migrate.stdout).toBe('');
  expect(migrate.stderr).toContain(`forge: Temporal namespace "default" at ${address} has no search attribute ForgeStage`);
  expect(migrate.stderr).toContain(register);
  expect(migrate.stderr).not.toMatch(STACK);

  // The printed command, run as printed (with the installed binary), registers it: the next error is another one.
  const [, ...args] = register.split(' ');
  const registered = await runCommand(requireTemporalBinary(), args, { env: childEnv });
  expect(registered).toMatchObject({ code: 0 });
  const again = await runForgeJson(['deploy', tool, '--test-input', '{"celsius":1}'], { env: childEnv });
  expect(again.json.type).not.toBe('SearchAttributesMissingError');
}, 60_000);

describe('no worker polls', () => {
  test('deploy: exit 3 within seconds, naming the queue, forge worker, forge up and --wait; the run it started is withdrawn', async () => {
    const r = await runForgeJson(['deploy', tool, '--test-input', '{"celsius":2}'], { env: childEnv });
    expect(r.code).toBe(3);
    expect(r.durationMs).toBeLessThan(SECONDS_NOT_FOREVER);
    expect(r.json).toMatchObject({
      type: 'NoWorkerError',
      taskQueue: queues.FORGE_TASK_QUEUE_CONTROL,
      namespace: 'default',
      workflowId: expect.stringMatching(/^tool-deploy\/celsius_to_fahrenheit\//),
      runWithdrawn: true,
    });
    expect(r.json.error).toEqual(expect.stringContaining(`No Forge worker polls the task queue "${queues.FORGE_TASK_QUEUE_CONTROL}"`));
    for (const hint of ['`forge worker`', '`forge up`', '--wait']) expect(r.json.error).toContain(hint);
    // Withdrawn: it cannot deploy later, behind the back of a caller that was told it did not.
    const described = await env.client.workflow.getHandle(r.json.workflowId as string).describe();
    expect(described.status.name).toBe('TERMINATED');
  }, 30_000);

  test('tools and migrate: the same sentence without --json, on stderr, one line, no stack; tools starts no run', async () => {
    const [tools, migrate] = await Promise.all([
      runForge(['tools'], { env: childEnv }),
      runForge(['migrate', '--name', 'agent_notes', migration], { env: childEnv }),
    ]);
    for (const r of [tools, migrate]) {
      expect(r.code).toBe(3);
      expect(r.durationMs).toBeLessThan(SECONDS_NOT_FOREVER);
      expect(r.stderr).toMatch(/^forge: No Forge worker polls the task queue "[^"]+" \(namespace "default" at [^)]+\): [^\n]+`forge worker`[^\n]+\n$/m);
      expect(r.stderr).not.toMatch(STACK);
      expect(r.stdout).toBe('');
    }
    expect(tools.stderr).toContain('nothing was started');
    const json = parseJsonStdout(await runForge(['tools', '--json'], { env: childEnv }));
    expect(json).toMatchObject({ type: 'NoWorkerError', runWithdrawn: false });
    expect(json.workflowId).toBeUndefined();
    const queries: string[] = [];
    for await (const run of env.client.workflow.list({ query: `WorkflowType = 'listToolsWorkflow' AND TaskQueue = '${queues.FORGE_TASK_QUEUE_CONTROL}'` })) {
      queries.push(run.workflowId);
    }
    expect(queries).toEqual([]);
  }, 60_000);

  test('call, which needs no Temporal, answers at once; with no tool written yet it says a worker writes them', async () => {
    const r = await runForgeJson(['call', 'celsius_to_fahrenheit', '--input', '{"celsius":1}'], { env: childEnv });
    expect(r.code).toBe(1);
    expect(r.json).toMatchObject({ ok: false, status: 'not_found' });
    expect(r.json.error).toEqual(expect.stringContaining(`${childEnv.FORGE_AGENT_TOOLS_DIR} holds no tool: a Forge worker writes the active ones there`));
    expect(r.json.error).toEqual(expect.stringContaining('`forge up` or `forge worker`'));
  });

  test('every command that waits on a run documents --wait', async () => {
    for (const command of ['deploy', 'tools', 'rollback', 'delete', 'migrate', 'migrations', 'promote', 'reverify', 'pay', 'sell', 'pnl']) {
      const help = await runForge([command, '--help']);
      expect({ command, wait: /--wait\s+when no Forge worker polls, wait for one/.test(help.stdout) }).toEqual({ command, wait: true });
    }
  }, 60_000);

  test('deploy --wait waits for a worker, and deploys once one polls', async () => {
    const waiting = runForgeJson(['deploy', tool, '--test-input', '{"celsius":100}', '--wait'], { env: childEnv, timeoutMs: 120_000 });
    let ended = false;
    void waiting.finally(() => (ended = true));
    // Well past the moment a command without --wait gives up.
    await new Promise((r) => setTimeout(r, 8_000));
    expect(ended).toBe(false);
    platform = await startTestPlatform(env, 'pglite', { env: queues });
    const r = await waiting;
    expect(r).toMatchObject({ code: 0, json: { status: 'active', name: 'celsius_to_fahrenheit' } });
  }, 150_000);
});
