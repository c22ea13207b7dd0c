import { MockActivityEnvironment } from '@temporalio/testing';
import { createDeployHereActivities, firstStepFinisher } from '../../src/activities/deploy-here';
import { createSandboxActivities } from '../../src/activities/sandbox-activities';
import { createToolActivities, type PrepareResult, type TestAndCommitHereResult, type ToolActivityDeps } from '../../src/activities/tool-activities';
import { toolContentHash } from '../../src/contract/hashes';
import { SandboxSlots } from '../../src/sandbox/slots';
import { sharedTypechecker } from '../../src/sandbox/typecheck';
import type { SandboxLimits } from '../../src/sandbox';
import { until, watchSandboxRuns } from '../chaos/end-state';
import { processesMarkedWith } from '../helpers/processes';
import { adderTool, sleepyTool } from '../helpers/tools';
import { scratchDatabase } from '../registry/helpers';

/**
 * A deployment's test begins beside its type check (prepareDeployment → startTestEarly), and the next step
 * (testToolHere) takes that verdict. What must hold: one run, not two; a tool the check refuses is cut off at once; a
 * verdict goes only to the run it was begun for, and for the content it ran; a test nobody claims does not run on.
 * Real sandbox runs and the real type checker; the checker is only held back until the run is seen under way.
 */

const runs = watchSandboxRuns();
const limits: Partial<SandboxLimits> = { tmpDir: runs.tmpRoot, envPassthrough: ['FORGE_CHAOS_MARKER'] };
const checker = sharedTypechecker();
let db: Awaited<ReturnType<typeof scratchDatabase>>;

beforeAll(async () => {
  db = await scratchDatabase();
}, 60_000);
afterAll(async () => {
  await db?.dispose();
  runs.dispose();
});
afterEach(async () => {
  // Whatever a test left running fails it here rather than the next one.
  expect(await runs.leftovers()).toEqual({ processes: [], runDirs: [] });
});

const running = () => processesMarkedWith(runs.marker).length > 0;

/** A worker's two deployment groups over one slot, the checker answering only once a run of the tool is under way. */
function worker(options: { earlyClaimMs?: number; finishInFirstStep?: boolean; checkOnceTestEnded?: boolean } = {}) {
  const slots = new SandboxSlots(1);
  const taken = jest.spyOn(slots, 'tryTake');
  let sawRunDuringCheck = false;
  const sandbox = createSandboxActivities({ limits, slots, earlyClaimMs: options.earlyClaimMs });
  const deps: ToolActivityDeps = {
    store: db.store,
    builtinTools: [],
    maxSourceBytes: 100_000,
    writeVersionFiles: async () => undefined,
    publish: async () => ({ generation: 0, tools: 0 }),
    sandbox: { taskQueue: 'unused', maxTimeoutMs: 30_000, here: true },
    typecheck: 'error',
    typechecker: {
      async check(source, name) {
        await until(running, 15_000, 'the test to be under way while the type check runs').catch(() => undefined);
        sawRunDuringCheck ||= running();
        // The run's processes gone: the verdict settles within milliseconds, well inside the first step's wait, on
        // however loaded a machine.
        if (options.checkOnceTestEnded) await until(() => !running(), 15_000, 'the test to end while the check waits');
        return checker.check(source, name);
      },
    },
    startTestEarly: sandbox.startTestEarly,
    // As the worker wires it (src/worker.ts): the deploy-here activities are made from these tool activities below.
    finishHere: options.finishInFirstStep ? (input) => finishInFirstStep(input) : undefined,
  };
  const tools = createToolActivities(deps);
  const here = createDeployHereActivities({ sandbox, tools });
  const finishInFirstStep = firstStepFinisher(sandbox, here);
  return { slots, taken, sandbox, tools, here, sawRunDuringCheck: () => sawRunDuringCheck };
}

const stepOf = (runId: string) => new MockActivityEnvironment({ workflowExecution: { workflowId: 'tool-deploy/early', runId }, isLocal: true });
const deployment = (name: string, source: string, testInput: unknown) => {
  const input = { name, source, testInput };
  return { ...input, contentHash: toolContentHash(input) };
};
const typeError = (name: string) => `import { z } from 'zod';
export default {
  name: '${name}',
  description: 'Waits, and has a type error the test never trips over.',
  inputSchema: z.object({ ms: z.number() }),
  async execute({ ms }: { ms: number }) {
    const n: number = 'not a number';
    await new Promise((r) => setTimeout(r, ms));
    return { n };
  },
};
`;

describe("a deployment's test begun beside its type check", () => {
  test('the next step takes the verdict of the test begun beside the check: one run, not two', async () => {
    const w = worker();
    const input = deployment('early_adder', adderTool('one', 'early_adder'), { a: 1, b: 2 });
    const step = stepOf('run-1');
    const prepared = await step.run(w.tools.prepareDeployment, input);
    expect(prepared).toMatchObject({ unchanged: false, typecheck: { errors: [] } });
    expect(w.sawRunDuringCheck()).toBe(true);
    const here = await step.run(w.sandbox.testToolHere, input);
    expect(here).toMatchObject({ verdict: { status: 'passed' } });
    expect(w.taken).toHaveBeenCalledTimes(1);
    expect(w.slots.busy).toBe(0);
  }, 60_000);

  test('a tool the type check refuses is cut off at once: no process of it runs on, and its slot is free', async () => {
    const w = worker();
    const input = deployment('early_refused', typeError('early_refused'), { ms: 60_000 });
    await expect(stepOf('run-2').run(w.tools.prepareDeployment, input)).rejects.toMatchObject({
      type: 'ToolRejected',
      details: [expect.objectContaining({ stage: 'typecheck' })],
    });
    expect(w.sawRunDuringCheck()).toBe(true);
    // Killed by the refusal, not by its 60 s: well before its own timeout could end it.
    await until(() => !running() && w.slots.busy === 0, 5_000, 'the refused tool to be killed');
    expect(w.taken).toHaveBeenCalledTimes(1);
  }, 60_000);

  test('a verdict goes only to the run it was begun for, and only for the content it ran', async () => {
    const w = worker();
    const input = deployment('early_owned', adderTool('one', 'early_owned'), { a: 1, b: 2 });
    await stepOf('run-a').run(w.tools.prepareDeployment, input);
    await until(() => w.slots.busy === 0, 10_000, "run A's test to end");
    // Another run of the same content (the same workflow ID, as a redeployment has) tests for itself.
    await expect(stepOf('run-b').run(w.sandbox.testToolHere, input)).resolves.toMatchObject({ verdict: { status: 'passed' } });
    expect(w.taken).toHaveBeenCalledTimes(2);
    // Run A, asking for another test input than the one its test ran with, gets a test of its own too.
    await expect(stepOf('run-a').run(w.sandbox.testToolHere, { ...input, testInput: { a: 2, b: 2 } })).resolves.toMatchObject({
      verdict: { status: 'passed' },
    });
    expect(w.taken).toHaveBeenCalledTimes(3);
  }, 60_000);

  test('a test nobody claims is killed once its claim window has passed', async () => {
    const w = worker({ earlyClaimMs: 500 });
    const input = deployment('early_orphan', sleepyTool('early_orphan'), { ms: 60_000 });
    await stepOf('run-3').run(w.tools.prepareDeployment, input);
    // The run's next step never comes (the run was cancelled, or its task moved elsewhere).
    await until(() => !running() && w.slots.busy === 0, 10_000, 'the unclaimed test to be killed');
  }, 60_000);
});

describe('the first step waits a little for that test, and commits when it passed', () => {
  const commitInput = (input: ReturnType<typeof deployment>) => ({ ...input, workflowId: 'tool-deploy/early' });

  test('a test that passes within the wait: the first step returns its verdict and the commit, and the version is active', async () => {
    const w = worker({ finishInFirstStep: true, checkOnceTestEnded: true });
    const input = deployment('first_quick', adderTool('one', 'first_quick'), { a: 1, b: 2 });
    const prepared = (await stepOf('run-q').run(w.tools.prepareDeployment, input)) as PrepareResult;
    expect(prepared.finishedHere).toMatchObject({ verdict: { status: 'passed' }, committed: { version: 1, created: true } });
    expect((await db.store.getActive('first_quick'))?.version).toBe(1);
    expect(w.taken).toHaveBeenCalledTimes(1);
    expect(w.slots.busy).toBe(0);
  }, 60_000);

  test('a test that outlasts the wait goes on running, and the next step takes it and commits: one run, not two', async () => {
    const w = worker({ finishInFirstStep: true });
    const input = deployment('first_long', sleepyTool('first_long'), { ms: 1_500 });
    const step = stepOf('run-l');
    const prepared = (await step.run(w.tools.prepareDeployment, input)) as PrepareResult;
    expect(prepared.finishedHere).toBeUndefined();
    expect(await db.store.getActive('first_long')).toBeUndefined();
    expect(running()).toBe(true);
    const here = (await step.run(w.here.testAndCommitHere, commitInput(input))) as TestAndCommitHereResult;
    expect(here).toMatchObject({ verdict: { status: 'passed' }, committed: { version: 1 } });
    expect(here.verdict!.durationMs).toBeGreaterThanOrEqual(1_500);
    expect(w.taken).toHaveBeenCalledTimes(1);
    expect((await db.store.getActive('first_long'))?.version).toBe(1);
  }, 60_000);

  test('a test that fails within the wait commits nothing there: the next step judges it, a rejection at test', async () => {
    const w = worker({ finishInFirstStep: true, checkOnceTestEnded: true });
    const failing = `import { z } from 'zod';
export default {
  name: 'first_failing',
  inputSchema: z.object({ n: z.number() }),
  async execute() { throw new Error('this tool always fails'); },
};
`;
    const input = deployment('first_failing', failing, { n: 1 });
    const step = stepOf('run-f');
    const prepared = (await step.run(w.tools.prepareDeployment, input)) as PrepareResult;
    expect(prepared.finishedHere).toBeUndefined();
    await expect(step.run(w.here.testAndCommitHere, commitInput(input))).rejects.toMatchObject({
      type: 'ToolRejected',
      details: [expect.objectContaining({ stage: 'test', verdict: 'failed' })],
    });
    expect(await db.store.listVersions('first_failing')).toEqual([]);
    expect(w.taken).toHaveBeenCalledTimes(1);
  }, 60_000);
});
