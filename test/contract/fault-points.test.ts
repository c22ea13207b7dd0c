import { MockActivityEnvironment } from '@temporalio/testing';
import { armFaultPoints, checkFaultPoints, saleFaults } from '../../src/activities/fault-points';
import { createDeployHereActivities, DEPLOY_HERE_INNER_STEPS, firstStepFinisher } from '../../src/activities/deploy-here';
import { createMigrationActivities } from '../../src/activities/migration-activities';
import { createPayActivities } from '../../src/activities/pay-activities';
import { createPromotionActivities } from '../../src/activities/promotion-activities';
import { createReverifyActivities, createReverifySandboxActivities } from '../../src/activities/reverify-activities';
import { createSandboxActivities } from '../../src/activities/sandbox-activities';
import { createSellActivities } from '../../src/activities/sell-activities';
import { createToolActivities, TOOL_INNER_STEPS, type ToolActivityDeps, type ToolInnerSteps } from '../../src/activities/tool-activities';
import { formatFaultPoint, parseFaultPoints, type FaultPoint, type StepCheckpoint } from '../../src/contract/fault-points';
import type { VerdictSummary } from '../../src/contract/tool-runs';
import { ONLINE_INDEX_KILL_CELLS, SALE_KILL_CELLS } from '../chaos/fault-cells';
import { SCENARIOS } from '../chaos/matrix/scenarios';

// Fault points fire from two hooks, never by rewriting an activity: the worker's activity interceptor around each
// activity it runs, and a checkpoint the combined activities call around the steps they run inside themselves. A
// typo is an error at start-up, never a chaos cell that silently does not fire.

/** Every point a chaos cell arms (FORGE_FAULT_KILL_AT), as the cell writes it into the worker's environment. */
const CELL_POINTS = [
  ...new Set([
    ...SCENARIOS.flatMap((s) => s.points.filter((p) => !s.externalKills?.[p]).map((p) => (p.includes(':') ? p : `${s.workflowType}:${p}`))),
    ...ONLINE_INDEX_KILL_CELLS.map((c) => c.kill).filter((kill) => kill.includes(':')),
    ...SALE_KILL_CELLS.map((c) => c.point),
  ]),
];
const INNER_STEPS: readonly string[] = [...TOOL_INNER_STEPS, ...DEPLOY_HERE_INNER_STEPS];

/**
 * The names of the activities the worker registers (src/worker.ts: the control, sandbox and promotion queues'),
 * from the same factories; they only close over their dependencies, so none is needed to list them.
 */
function registeredActivityNames(): string[] {
  const none = {} as never;
  const control = {
    ...createToolActivities({ typecheck: 'off' } as ToolActivityDeps),
    ...createDeployHereActivities(none),
    ...createMigrationActivities(none),
    ...createReverifyActivities(none),
    ...createPayActivities(none),
    ...createSellActivities(none),
  };
  const sandbox = { testTool: createSandboxActivities(none).testTool, ...createReverifySandboxActivities(none) };
  return [control, sandbox, createPromotionActivities(none)].flatMap((registered) => Object.keys(registered));
}

/** What happened, in order: each step's side effect by its name, and each point that fired as `<name>.<moment>`. */
type Log = string[];

/**
 * The worker's two hooks for `points`, firing into `log` instead of killing; run through the real interceptor in
 * Temporal's own activity environment (the SDK runs a worker's local and regular activities through the same code).
 */
function armed(points: string, log: Log) {
  const faults = armFaultPoints(parseFaultPoints(points), (p) => log.push(`${p.activity}.${p.moment}`));
  const run = <A extends unknown[], R>(workflowType: string, activityType: string, fn: (...args: A) => Promise<R>, ...args: A) =>
    new MockActivityEnvironment({ workflowType, activityType, isLocal: true }, { interceptors: faults ? [faults.interceptor] : [] }).run(fn, ...args);
  return { faults, run };
}

/** The deployment's combined activities as the worker builds them, around steps that only log their side effect. */
function deploymentActivities(checkpoint: StepCheckpoint | undefined, log: Log) {
  const effect =
    <R>(name: string, result: R) =>
    async () => {
      log.push(name);
      return result;
    };
  const steps = {
    validateDeployment: effect('validate', { sandbox: { taskQueue: 'q', maxTimeoutMs: 1000 }, unchanged: false }),
    compileCheck: effect('compile', { compiledBytes: 1, warnings: [] }),
    typecheckModule: effect('typecheck', undefined),
    commitVersion: effect('commit', { version: 2, previousVersion: 1, created: true }),
  } as unknown as ToolInnerSteps;
  const deps = { publish: effect('publish', { generation: 1, tools: 1 }), checkpoint, sandbox: { here: true } } as unknown as ToolActivityDeps;
  const tools = createToolActivities(deps, steps);
  const here = createDeployHereActivities({
    sandbox: { testToolHere: effect('test', { verdict: { status: 'passed' } as VerdictSummary }) },
    tools,
    checkpoint,
  });
  // The first step as it runs when the test it began passes within its wait: it goes on into testAndCommitHere.
  const finishing = createToolActivities(
    {
      ...deps,
      startTestEarly: () => ({ cancel: () => undefined }),
      finishHere: firstStepFinisher({ earlyTestPassedWithin: async () => true }, here),
    },
    steps,
  );
  return { ...tools, ...here, prepareDeploymentFinishingHere: finishing.prepareDeployment };
}

const DEPLOY_INPUT = { name: 'chaos_tool', source: 'export default 1', testInput: {}, contentHash: 'h', workflowId: 'tool-deploy/chaos_tool/h' };

/**
 * Each combined activity of a deployment with every point of it armed: the order in which its points fire around
 * the side effects of its steps. A worker armed at one of these points dies exactly where its name stands here.
 */
const STEPS: Record<'testAndCommitHere' | 'commitAndPublish' | 'prepareDeployment', string[]> = {
  testAndCommitHere: [
    'testAndCommitHere.before',
    'testToolHere.before',
    'test',
    'testToolHere.after',
    'commitAndPublish.before',
    'commitVersion.before',
    'commit',
    'commitVersion.after',
    'publishTools.before',
    'publish',
    'publishTools.after',
    'commitAndPublish.after',
    'testAndCommitHere.after',
  ],
  commitAndPublish: [
    'commitAndPublish.before',
    'commitVersion.before',
    'commit',
    'commitVersion.after',
    'publishTools.before',
    'publish',
    'publishTools.after',
    'commitAndPublish.after',
  ],
  prepareDeployment: [
    'prepareDeployment.before',
    'validateDeployment.before',
    'validate',
    'validateDeployment.after',
    'compileCheck.before',
    'compile',
    'compileCheck.after',
    'typecheckModule.before',
    'typecheck',
    'typecheckModule.after',
    'prepareDeployment.after',
  ],
};
const COMBINED = {
  ...STEPS,
  // A test that passed within the first step's wait: testAndCommitHere's inner steps fire inside prepareDeployment,
  // before its end (testAndCommitHere itself is then no activity of the run's, and no point of its own fires).
  prepareDeploymentFinishingHere: [
    ...STEPS.prepareDeployment.slice(0, -1),
    ...STEPS.testAndCommitHere.filter((e) => !e.startsWith('testAndCommitHere.')),
    'prepareDeployment.after',
  ],
};
const isPoint = (entry: string) => entry.includes('.');

async function runCombined(activity: keyof typeof COMBINED, points: string): Promise<Log> {
  const log: Log = [];
  const { faults, run } = armed(points, log);
  const activities = deploymentActivities(faults?.checkpoint, log);
  const first = activity.startsWith('prepareDeployment');
  const input = first ? DEPLOY_INPUT : { ...DEPLOY_INPUT, verdict: { status: 'passed' } as VerdictSummary };
  // The worker registers the first step as prepareDeployment, whichever way it ends.
  await run('deployToolWorkflow', first ? 'prepareDeployment' : activity, activities[activity] as (i: unknown) => Promise<unknown>, input);
  return log;
}

test('every point a chaos cell arms names an activity the worker registers or a step one runs inside itself', () => {
  expect(CELL_POINTS.length).toBeGreaterThan(60);
  const points = parseFaultPoints(CELL_POINTS.join(','));
  expect(() => checkFaultPoints(points, { activities: registeredActivityNames(), steps: INNER_STEPS })).not.toThrow();
});

test('a point naming nothing is refused at start-up, naming what is known; sale points are the seller’s to check', () => {
  const names = { activities: ['publishTools'], steps: ['commitVersion'] };
  expect(() => checkFaultPoints(parseFaultPoints('deployToolWorkflow:commitVersoin.after'), names)).toThrow(
    /no activity or step of one is called commitVersoin; known: commitVersion, publishTools/,
  );
  expect(() => checkFaultPoints(parseFaultPoints('sale:reserveSale.after, rollbackToolWorkflow:publishTools.before'), names)).not.toThrow();
});

test('unarmed, or armed at sale points only: no interceptor and no checkpoint at all', async () => {
  expect(armFaultPoints([])).toBeUndefined();
  expect(armFaultPoints(parseFaultPoints('sale:reserveSale.after'))).toBeUndefined();
  expect(await runCombined('testAndCommitHere', '')).toEqual(COMBINED.testAndCommitHere.filter((e) => !isPoint(e)));
});

test('all points of a combined activity armed at once: each fires once, in its place around the steps', async () => {
  for (const [activity, order] of Object.entries(COMBINED) as Array<[keyof typeof COMBINED, string[]]>) {
    const all = order.filter(isPoint).map((p) => `deployToolWorkflow:${p}`);
    expect(await runCombined(activity, all.join(','))).toEqual(order);
  }
});

describe.each(CELL_POINTS.filter((p) => !p.startsWith('sale:')).map((p) => [p]))('%s', (spec) => {
  const [point] = parseFaultPoints(spec) as [FaultPoint];
  const name = `${point.activity}.${point.moment}`;

  test('armed alone, as its cell arms it, it fires where it should and nowhere else', async () => {
    if (point.workflowType === 'deployToolWorkflow' && INNER_STEPS.includes(point.activity)) {
      // Reached inside the combined activity a deployment runs in its workflow task (the matrix's first scenario); a
      // rollback or a deletion calls publishTools as an activity of its own (below).
      const order = COMBINED.testAndCommitHere;
      expect(order).toContain(name);
      expect(await runCombined('testAndCommitHere', spec)).toEqual(order.filter((e) => !isPoint(e) || e === name));
      return;
    }
    // An activity of its own: the interceptor fires it before the function starts or after it returned.
    const log: Log = [];
    const { run } = armed(spec, log);
    const body = async () => {
      log.push('ran');
    };
    await run(point.workflowType, point.activity, body);
    expect(log).toEqual(point.moment === 'before' ? [name, 'ran'] : ['ran', name]);
    // Not for another workflow type's run of the same activity, nor for another activity.
    log.length = 0;
    await run('someOtherWorkflow', point.activity, body);
    await run(point.workflowType, `${point.activity}X`, body);
    expect(log).toEqual(['ran', 'ran']);
  });
});

test('an activity that throws has no after point, as an activity that fails has not returned', async () => {
  const log: Log = [];
  const { run } = armed('payWorkflow:sendPayment.before,payWorkflow:sendPayment.after', log);
  await expect(
    run('payWorkflow', 'sendPayment', async () => {
      throw new Error('refused');
    }),
  ).rejects.toThrow('refused');
  expect(log).toEqual(['sendPayment.before']);
});

test('every sale point a cell arms fires only at its step and moment', () => {
  for (const spec of new Set(SALE_KILL_CELLS.map((c) => c.point))) {
    const killed: string[] = [];
    const fire = saleFaults(parseFaultPoints(spec), (p) => killed.push(formatFaultPoint(p)));
    expect(fire).toBeDefined();
    for (const step of ['reserveSale', 'recordSale'] as const) for (const moment of ['before', 'after'] as const) fire!(step, moment);
    expect(killed).toEqual([spec]);
  }
});

test('no sale point armed: no hook at all; a step a sale does not have is refused, naming the known ones', () => {
  expect(saleFaults(parseFaultPoints('payWorkflow:sendPayment.after'))).toBeUndefined();
  expect(() => saleFaults(parseFaultPoints('sale:settleSale.after'))).toThrow(/no step settleSale; known: reserveSale, recordSale/);
});
