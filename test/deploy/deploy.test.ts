import { existsSync, readFileSync, readdirSync } from 'node:fs';
import fsp from 'node:fs/promises';
import { getEventListeners } from 'node:events';
import path from 'node:path';
import { ForgeInputError, type RunProgress } from '../../src/client';
import { readActiveIndex, ToolRegistry } from '../../src/registry';
import { databaseKinds, startTestPlatform, useTemporal, type TestPlatform } from '../helpers/platform';
import { adderTool } from '../helpers/tools';
import { DEPLOY_SHAPES, runShape } from '../helpers/run-shape';

const fixture = (name: string) => readFileSync(path.join(__dirname, '..', 'fixtures', 'tools', `${name}.ts`), 'utf8');

/** The example: a type mistake the test input never trips over (it deployed as active before typecheck). */
const labelTool = (name: string) => `import { z } from 'zod';
export default {
  name: '${name}',
  inputSchema: z.object({ n: z.number() }),
  async execute(input: { n: number }) {
    const label: number = 'n is ' + input.n;
    return { label };
  },
};
`;

const temporal = useTemporal();

describe.each(databaseKinds())('tool deployment on %s', (kind) => {
  let platform: TestPlatform;
  let registry: ToolRegistry;
  beforeAll(async () => {
    platform = await startTestPlatform(temporal(), kind);
    registry = await ToolRegistry.open({ dir: platform.config.agentToolsDir, pollIntervalMs: 100 });
  }, 120_000);
  afterAll(async () => {
    await registry?.close();
    await platform?.teardown();
  });

  test('deploy → call → redeploy → call sees v2 → rollback → call sees v1', async () => {
    const v1 = await platform.forge.deployTool({ name: 'adder', source: adderTool('one'), testInput: { a: 1, b: 2 } });
    expect(v1).toMatchObject({ status: 'active', name: 'adder', version: 1, verdict: 'passed' });
    expect(v1.workflowId).toMatch(/^tool-deploy\/adder\/[0-9a-f]{16}$/);
    expect(v1.diagnostics.stages.map((s) => [s.name, s.status])).toEqual([
      ['validate', 'done'],
      ['compile', 'done'],
      ['typecheck', 'done'],
      ['test', 'done'],
      ['commit', 'done'],
      ['notify', 'done'],
    ]);
    await registry.waitFor('adder', 1, 10_000);
    expect(await registry.invoke('adder', { a: 2, b: 3 })).toMatchObject({ ok: true, version: 1, output: { sum: 5, variant: 'one' } });
    // No --description: the one the tool's module declares is stored, in the registry and in `forge tools`.
    expect(registry.get('adder')?.description).toBe('Adds two numbers (one).');
    expect((await platform.forge.listTools()).tools).toEqual([expect.objectContaining({ name: 'adder', description: 'Adds two numbers (one).' })]);
    // The schema as JSON Schema, derived by the test run, for agents that describe tools to a model.
    expect(registry.get('adder')?.inputJsonSchema).toMatchObject({
      type: 'object',
      properties: { a: { type: 'number' }, b: { type: 'number' } },
      required: ['a', 'b'],
    });

    const v2 = await platform.forge.deployTool({ name: 'adder', source: adderTool('two'), testInput: { a: 1, b: 2 } });
    expect(v2).toMatchObject({ status: 'active', version: 2, previousVersion: 1 });
    await registry.waitFor('adder', 2, 10_000);
    expect(await registry.invoke('adder', { a: 2, b: 3 })).toMatchObject({ ok: true, version: 2, output: { variant: 'two' } });

    const back = await platform.forge.rollbackTool('adder');
    expect(back).toMatchObject({ status: 'active', version: 1, previousVersion: 2 });
    // What an operator reads in the Web UI: the summary and the markdown details of what the run was asked.
    const described = await platform.env.client.workflow.getHandle(back.workflowId).describe();
    expect(await described.staticSummary()).toBe('Roll back tool adder');
    expect(await described.staticDetails()).toBe('**tool:** adder\n**to:** the newest version below the active one');
    await registry.waitFor('adder', 1, 10_000);
    expect(await registry.invoke('adder', { a: 2, b: 3 })).toMatchObject({ ok: true, version: 1, output: { variant: 'one' } });

    const list = await platform.forge.listTools();
    expect(list.tools).toEqual([expect.objectContaining({ name: 'adder', activeVersion: 1, status: 'active', versions: 2 })]);

    // A tool of one version: the message says what can help (not --to, which cannot).
    await platform.forge.deployTool({ name: 'lonely', source: adderTool('x', 'lonely'), testInput: { a: 1, b: 2 } });
    const lonely = await platform.forge.rollbackTool('lonely');
    expect(lonely).toMatchObject({
      status: 'rejected',
      message: '"lonely" has only v1, nothing to roll back to; deploy a changed version, or delete the tool',
    });

    const missing = await platform.forge.rollbackTool('adder', { toVersion: 9 });
    expect(missing).toMatchObject({ status: 'rejected' });
    expect(missing.message).toMatch(/no version 9; stored versions: 1, 2/);
  });

  test('a quick test passes within the first step, which commits too: the whole deployment is one local activity', async () => {
    // The test begins beside the type check, on a spare, and the first step waits a little for it
    // (FIRST_STEP_TEST_WAIT_MS). A machine loaded enough to make one run outlast the wait gets the two-step shape
    // instead, so one deployment of three must be one step, and none may be anything but one of the two shapes.
    const shapes = [];
    for (const variant of ['one', 'two', 'three']) {
      const result = await platform.forge.deployTool({ name: 'one_step', source: adderTool(variant, 'one_step'), testInput: { a: 1, b: 2 } });
      expect(result).toMatchObject({ status: 'active', verdict: 'passed' });
      expect(result.diagnostics.stages.map((s) => s.status)).toEqual(['done', 'done', 'done', 'done', 'done', 'done']);
      const shape = await runShape(platform.env.client, result.workflowId);
      const testStage = result.diagnostics.stages.find((s) => s.name === 'test');
      expect(testStage?.summary?.endsWith('(in the first step)')).toBe(shape.localActivities.length === 1);
      shapes.push(shape);
    }
    for (const shape of shapes) expect([DEPLOY_SHAPES.oneStep, DEPLOY_SHAPES.twoSteps]).toContainEqual(shape);
    expect(shapes).toContainEqual(DEPLOY_SHAPES.oneStep);
    // What a caller sees is the same either way: the latest version active, and the files on disk say so.
    await registry.waitFor('one_step', 3, 10_000);
    expect(await registry.invoke('one_step', { a: 2, b: 3 })).toMatchObject({ ok: true, version: 3, output: { variant: 'three' } });
  }, 60_000);
  test('a hostile tool is rejected with its verdict and leaves v1 active, with no file of it on disk', async () => {
    await platform.forge.deployTool({
      name: 'steady',
      source: fixture('celsius_to_fahrenheit').replace(/celsius_to_fahrenheit/g, 'steady'),
      testInput: { celsius: 1 },
    });
    const hostile = fixture('offheap_bomb').replace(/offheap_bomb/g, 'steady');
    const result = await platform.forge.deployTool({ name: 'steady', source: hostile, testInput: {} });
    expect(result).toMatchObject({ status: 'rejected', verdict: 'oom', diagnostics: { stage: 'test' } });
    expect(result.version).toBeUndefined();
    expect(result.diagnostics.sandbox?.status).toBe('oom');
    const active = await readActiveIndex(platform.config.agentToolsDir);
    expect(active?.tools.steady.version).toBe(1);
    expect(readdirSync(path.join(platform.config.agentToolsDir, 'steady')).sort()).toEqual(['v1.json', 'v1.mjs', 'v1.ts']);
  });

  test('a compile error comes back with line and column; a built-in name is refused', async () => {
    const broken = await platform.forge.deployTool({ name: 'syntax_error', source: fixture('syntax_error'), testInput: {} });
    expect(broken).toMatchObject({ status: 'rejected', verdict: 'failed', diagnostics: { stage: 'compile' } });
    expect(broken.diagnostics.compileErrors?.[0].location).toMatchObject({ line: 5, column: 36 });
    // The stage lines agree with the verdict: validate passed, compile failed, the rest never ran.
    expect(broken.diagnostics.stages.map((s) => [s.name, s.status])).toEqual([
      ['validate', 'done'],
      ['compile', 'failed'],
      ['typecheck', 'skipped'],
      ['test', 'skipped'],
      ['commit', 'skipped'],
      ['notify', 'skipped'],
    ]);
    const builtin = await platform.forge.deployTool({ name: 'shell', source: adderTool('x', 'shell'), testInput: {} });
    expect(builtin).toMatchObject({ status: 'rejected', verdict: 'refused', diagnostics: { stage: 'validate' } });
    expect(builtin.diagnostics.message).toMatch(/built-in/);
    expect(builtin.diagnostics.stages[0]).toMatchObject({ name: 'validate', status: 'failed' });
  });

  test('a type error is rejected at typecheck with file:line:col, TS2322 and the message; nothing is stored', async () => {
    const result = await platform.forge.deployTool({ name: 'labeller', source: labelTool('labeller'), testInput: { n: 1 } });
    expect(result).toMatchObject({ status: 'rejected', name: 'labeller', verdict: 'failed', diagnostics: { stage: 'typecheck' } });
    expect(result.diagnostics.message).toBe("the source does not type-check: labeller.ts:6:11: TS2322: Type 'string' is not assignable to type 'number'.");
    expect(result.diagnostics.typeErrors).toEqual([
      {
        message: "labeller.ts:6:11: TS2322: Type 'string' is not assignable to type 'number'.",
        code: 'TS2322',
        location: { file: 'labeller.ts', line: 6, column: 11, lineText: "    const label: number = 'n is ' + input.n;" },
      },
    ]);
    // Compile passed, the checker refused, the test never ran.
    expect(result.diagnostics.stages.map((s) => [s.name, s.status])).toEqual([
      ['validate', 'done'],
      ['compile', 'done'],
      ['typecheck', 'failed'],
      ['test', 'skipped'],
      ['commit', 'skipped'],
      ['notify', 'skipped'],
    ]);
    expect(result.version).toBeUndefined();
    expect(await platform.workers.store.listVersions('labeller')).toEqual([]);
    expect(existsSync(path.join(platform.config.agentToolsDir, 'labeller'))).toBe(false);
    // The run says so where an operator looks too.
    expect((await platform.forge.getRun(result.workflowId)).progress?.stages.find((s) => s.name === 'typecheck')).toMatchObject({
      status: 'failed',
      summary: expect.stringContaining('TS2322'),
    });
  });

  test('a tool importing zod type-checks against the installed zod: a misuse of its types is rejected', async () => {
    const misuse = `import { z } from 'zod';
const Input = z.object({ n: z.number() });
export default {
  name: 'zod_misuse',
  inputSchema: Input,
  async execute(input: unknown) { return { n: Input.parse(input).n.toUpperCase() }; },
};
`;
    const result = await platform.forge.deployTool({ name: 'zod_misuse', source: misuse, testInput: { n: 1 } });
    expect(result).toMatchObject({ status: 'rejected', diagnostics: { stage: 'typecheck' } });
    expect(result.diagnostics.typeErrors?.[0]).toMatchObject({ code: 'TS2339', location: { file: 'zod_misuse.ts', line: 6 } });
    expect(result.diagnostics.typeErrors?.[0].message).toMatch(/Property 'toUpperCase' does not exist on type 'number'/);
  });

  test('invalid input is refused by the client before anything starts', async () => {
    const bad = [
      { name: 'Adder', source: adderTool('x'), testInput: {} },
      { name: '../etc/passwd', source: adderTool('x'), testInput: {} },
      { name: 'a'.repeat(65), source: adderTool('x'), testInput: {} },
      { name: 'empty_source', source: '   ', testInput: {} },
      { name: 'bad_input', source: adderTool('x'), testInput: { n: 10n } },
    ];
    for (const input of bad) await expect(platform.forge.deployTool(input)).rejects.toBeInstanceOf(ForgeInputError);
    const started: string[] = [];
    for await (const run of temporal().client.workflow.list({ query: `WorkflowId STARTS_WITH 'tool-deploy/'` })) started.push(run.workflowId);
    const refusedNames = bad.map((b) => b.name);
    expect(started.filter((id) => refusedNames.includes(id.split('/')[1]))).toEqual([]);
  });

  test('an identical resubmission joins the same run; after it, identical content is a no-op', async () => {
    const input = { name: 'twice', source: adderTool('x', 'twice'), testInput: { a: 1, b: 1 } };
    const [first, second] = await Promise.all([platform.forge.startDeployTool(input), platform.forge.startDeployTool(input)]);
    expect(second.workflowId).toBe(first.workflowId);
    expect(second.runId).toBe(first.runId);
    const [r1, r2] = await Promise.all([first.result(), second.result()]);
    expect(r1).toEqual(r2);
    expect(r1).toMatchObject({ status: 'active', version: 1 });
    const again = await platform.forge.deployTool(input);
    expect(again).toMatchObject({ status: 'active', version: 1, unchanged: true });
    expect(await platform.workers.store.listVersions('twice')).toHaveLength(1);
  });

  test('20 concurrent deployments of one tool end with database, disk and registry agreeing', async () => {
    const results = await Promise.all(
      Array.from({ length: 20 }, (_, i) => platform.forge.deployTool({ name: 'racer', source: adderTool(`r${i}`, 'racer'), testInput: { a: i, b: 0 } })),
    );
    expect(results.every((r) => r.status === 'active')).toBe(true);
    const versions = results.map((r) => r.version!).sort((a, b) => a - b);
    expect(versions).toEqual(Array.from({ length: 20 }, (_, i) => i + 1));
    const newest = results.find((r) => r.version === 20)!;
    const active = await platform.workers.store.getActive('racer');
    expect(active?.version).toBe(20);
    const onDisk = await readActiveIndex(platform.config.agentToolsDir);
    expect(onDisk?.tools.racer.version).toBe(20);
    for (let v = 1; v <= 20; v++) expect(existsSync(path.join(platform.config.agentToolsDir, 'racer', `v${v}.mjs`))).toBe(true);
    await registry.waitFor('racer', 20, 10_000);
    const call = await registry.invoke('racer', { a: 1, b: 1 });
    expect(call).toMatchObject({ ok: true, version: 20 });
    // Each one replaced whatever was active when it committed: v20 replaced one of the other nineteen.
    expect(newest.previousVersion).toBeGreaterThanOrEqual(1);
    expect(newest.previousVersion).toBeLessThan(20);
  }, 180_000);

  // The client names a deployment by its content, so submitting v1's content again reuses v1's workflow ID. That later
  // run once reported "v1 of tock is active" while v2 stayed active: its commit took v1's first activation for its own.
  test("deploying an earlier version's content again makes it active, as its result says", async () => {
    const one = await platform.forge.deployTool({ name: 'tock', source: adderTool('one', 'tock'), testInput: { a: 1, b: 2 } });
    await platform.forge.deployTool({ name: 'tock', source: adderTool('two', 'tock'), testInput: { a: 1, b: 2 } });
    const again = await platform.forge.deployTool({ name: 'tock', source: adderTool('one', 'tock'), testInput: { a: 1, b: 2 } });
    expect(again.workflowId).toBe(one.workflowId);
    expect(again).toMatchObject({ status: 'active', version: 1, previousVersion: 2 });
    expect((await platform.forge.listTools()).tools).toEqual(expect.arrayContaining([expect.objectContaining({ name: 'tock', activeVersion: 1 })]));
    await registry.waitFor('tock', 1, 10_000);
    expect(await registry.invoke('tock', { a: 2, b: 3 })).toMatchObject({ ok: true, version: 1, output: { variant: 'one' } });
  });

  test('delete removes the tool everywhere; a redeploy continues the version numbers', async () => {
    const source = adderTool('d', 'doomed');
    await platform.forge.deployTool({ name: 'doomed', source, testInput: { a: 1, b: 1 } });
    const deleted = await platform.forge.deleteTool('doomed');
    expect(deleted).toMatchObject({ status: 'deleted', previousVersion: 1, removedVersions: 1 });
    await registry.waitFor('doomed', (t) => t === undefined, 10_000);
    expect(await registry.invoke('doomed', {})).toMatchObject({ ok: false, status: 'not_found' });
    expect((await platform.forge.listTools()).tools.map((t) => t.name)).not.toContain('doomed');
    const again = await platform.forge.deployTool({ name: 'doomed', source, testInput: { a: 1, b: 1 } });
    expect(again).toMatchObject({ status: 'active', version: 2 });
    expect(await platform.forge.deleteTool('never_was')).toMatchObject({ status: 'rejected' });
  });

  test('a rollback and a delete publish only their own tool: no other tool of agent-tools/ is read (issue 28)', async () => {
    await platform.forge.deployTool({ name: 'bystander', source: adderTool('b', 'bystander'), testInput: { a: 1, b: 1 } });
    await platform.forge.deployTool({ name: 'mover', source: adderTool('m1', 'mover'), testInput: { a: 1, b: 1 } });
    await platform.forge.deployTool({ name: 'mover', source: adderTool('m2', 'mover'), testInput: { a: 1, b: 1 } });
    await registry.waitFor('mover', 2, 10_000);
    // Every file of agent-tools/ the process reads while the runs go (the worker runs here, in this process): a
    // publish of every tool reads each active tool's manifest, bystander/v1.json among them.
    const dir = platform.config.agentToolsDir;
    const read: string[] = [];
    const readFile = fsp.readFile.bind(fsp);
    const spy = jest.spyOn(fsp, 'readFile').mockImplementation(((p: Parameters<typeof fsp.readFile>[0], ...rest: unknown[]) => {
      read.push(path.relative(dir, String(p)));
      return (readFile as (...a: unknown[]) => unknown)(p, ...rest);
    }) as typeof fsp.readFile);
    try {
      expect(await platform.forge.rollbackTool('mover')).toMatchObject({ status: 'active', version: 1 });
      await registry.waitFor('mover', 1, 10_000);
      expect(await platform.forge.deleteTool('mover')).toMatchObject({ status: 'deleted' });
      await registry.waitFor('mover', (t) => t === undefined, 10_000);
    } finally {
      spy.mockRestore();
    }
    expect(read.filter((f) => f.startsWith('mover/')).length).toBeGreaterThan(0);
    expect(read.filter((f) => f.startsWith('bystander/'))).toEqual([]);
    expect(await registry.invoke('bystander', { a: 1, b: 2 })).toMatchObject({ ok: true, version: 1 });
  });

  test('listRuns finds runs by kind and status from visibility', async () => {
    const deploys = await platform.forge.listRuns({ kind: 'deploy', status: 'completed', limit: 100 });
    expect(deploys.length).toBeGreaterThan(0);
    expect(deploys.every((r) => r.kind === 'deploy' && r.status === 'COMPLETED' && r.workflowId.startsWith('tool-deploy/'))).toBe(true);
    const rollbacks = await platform.forge.listRuns({ kind: 'rollback' });
    expect(rollbacks.every((r) => r.workflowId.startsWith('tool-rollback/'))).toBe(true);
    await expect(platform.forge.listRuns({ status: 'sideways' })).rejects.toBeInstanceOf(ForgeInputError);
  });

  test('getRun tells kind, subject, outcome, progress and result', async () => {
    const result = await platform.forge.deployTool({ name: 'described', source: adderTool('x', 'described'), testInput: { a: 1, b: 1 } });
    const run = await platform.forge.getRun(result.workflowId);
    // ForgeStage: the last stage the run reached (where a rejected run stopped).
    expect(run).toMatchObject({ status: 'COMPLETED', kind: 'deploy', subject: 'described', outcome: 'active', stage: 'notify', type: 'deployToolWorkflow' });
    expect(run.progress?.stages.every((s) => s.status === 'done')).toBe(true);
    expect(run.result).toMatchObject({ status: 'active', version: 1 });
  });

  // Issue 9: with the worker gone after a run ended, a client waiting with progress printed the (right) result ~60 s
  // late: it waited for a progress query that needs a worker. The result carries its stages; nothing waits for one.
  test('a client waiting with progress on a run that ended while no worker answers gets the result at once', async () => {
    const started = await platform.forge.startDeployTool({ name: 'orphaned', source: adderTool('o', 'orphaned'), testInput: { a: 1, b: 1 } });
    await platform.env.client.workflow.getHandle(started.workflowId).result();
    await platform.stopWorkers();
    try {
      const seen: RunProgress[] = [];
      const waited = Date.now();
      const result = await started.result({ onProgress: (p) => seen.push(p) });
      expect(Date.now() - waited).toBeLessThan(5_000);
      expect(result).toMatchObject({ status: 'active', name: 'orphaned' });
      expect(seen.at(-1)).toMatchObject({ kind: 'deploy', subject: 'orphaned' });
      expect(seen.at(-1)?.stages.map((s) => s.status)).toEqual(['done', 'done', 'done', 'done', 'done', 'done']);
    } finally {
      await platform.startWorkers();
    }
  });
});

describe.each([
  ['warn', 'deploys it active with the type errors in the result'],
  ['off', 'skips the check: it deploys active with nothing to say'],
] as const)('FORGE_TYPECHECK=%s', (mode, what) => {
  let platform: TestPlatform;
  beforeAll(async () => {
    platform = await startTestPlatform(temporal(), 'pglite', { env: { FORGE_TYPECHECK: mode } });
  }, 120_000);
  afterAll(() => platform?.teardown());

  test(`a tool with a type error: ${what}`, async () => {
    const result = await platform.forge.deployTool({ name: 'labeller', source: labelTool('labeller'), testInput: { n: 1 } });
    expect(result).toMatchObject({ status: 'active', version: 1, verdict: 'passed', diagnostics: { stage: 'notify' } });
    const typecheck = result.diagnostics.stages.find((s) => s.name === 'typecheck');
    if (mode === 'warn') {
      expect(result.diagnostics.typeErrors).toEqual([
        expect.objectContaining({ code: 'TS2322', location: expect.objectContaining({ file: 'labeller.ts', line: 6, column: 11 }) }),
      ]);
      expect(result.diagnostics.message).toMatch(/^v1 of labeller is active, with 1 type error reported \(FORGE_TYPECHECK=warn; .*labeller\.ts:6:11: TS2322/);
      expect(typecheck).toMatchObject({ status: 'done', summary: expect.stringContaining('1 type error') });
    } else {
      expect(result.diagnostics.typeErrors).toBeUndefined();
      expect(result.diagnostics.message).toBe('v1 of labeller is active');
      expect(typecheck).toMatchObject({ status: 'skipped' });
    }
  });
});

describe('waiting for a long run with progress, as the CLI does', () => {
  let platform: TestPlatform;
  beforeAll(async () => {
    // The test on the sandbox queue, as a promotion's stages and a re-verification's runs are: the workflow answers
    // its progress query at once all the while (a test run in place holds the workflow task, and the query waits).
    platform = await startTestPlatform(temporal(), 'pglite', { env: { FORGE_SANDBOX_TEST_HERE: 'off' } });
  }, 120_000);
  afterAll(() => platform?.teardown());

  test('no AbortSignal collects more than one listener per call: dozens of progress queries, no MaxListenersExceededWarning', async () => {
    // forge promote and forge reverify --now printed MaxListenersExceededWarning: every gRPC call made under an
    // AbortSignal leaves an 'abort' listener on it (Temporal's connection never removes it), and one signal served a
    // progress query every 150 ms. (Node's warning goes to the real process, which a jest test does not see: the
    // listeners are counted on every signal the client hands Temporal instead, after each call.)
    const client = temporal().client;
    const original = client.withAbortSignal.bind(client);
    const signals = new Set<AbortSignal>();
    let most = 0;
    let calls = 0;
    client.withAbortSignal = async <R>(signal: AbortSignal, fn: () => Promise<R>): Promise<R> => {
      signals.add(signal);
      calls++;
      try {
        return await original(signal, fn);
      } finally {
        for (const s of signals) most = Math.max(most, getEventListeners(s, 'abort').length);
      }
    };
    try {
      const seen: RunProgress[] = [];
      const started = Date.now();
      const result = await platform.forge.deployTool(
        { name: 'slow_listener', source: slowTool('slow_listener'), testInput: { ms: 4_000 } },
        { onProgress: (p) => seen.push(p) },
      );
      expect(result).toMatchObject({ status: 'active', name: 'slow_listener' });
      // Long enough for well over ten queries (one per 150 ms), each of which once left a listener behind.
      expect(Date.now() - started).toBeGreaterThan(4_000);
      expect(calls).toBeGreaterThan(10);
      expect(seen.length).toBeGreaterThan(1);
    } finally {
      client.withAbortSignal = original;
    }
    // Node warns past 10; a call's own signal holds Temporal's one listener (and the caller's signal one forwarder).
    expect(most).toBeLessThanOrEqual(2);
  }, 60_000);
});

/** A tool whose test takes `ms`. */
function slowTool(name: string): string {
  return `import { z } from 'zod';
export default {
  name: '${name}',
  description: 'Waits.',
  inputSchema: z.object({ ms: z.number() }),
  timeoutMs: 20_000,
  async execute({ ms }: { ms: number }) {
    await new Promise((r) => setTimeout(r, ms));
    return { waited: ms };
  },
};
`;
}
