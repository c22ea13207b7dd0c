import type { ForgeClient } from '../../../src/client';
import type { LiveProcess } from './end-state';
import { payCancelledScenario, payScenario } from './pay';
import { movedBranchPromotionScenario, promotionScenario } from './promotion';
import { reverifyBuiltinScenario, reverifyQueuedScenario, reverifyScenario } from './reverify';
import { sleepyTool } from '../../helpers/tools';

/**
 * One workflow of the matrix: what exists before the run (made by an unarmed worker), the run itself, and the part
 * of its result that must not depend on whether a crash happened. Each fault point is `<activity>.<before|after>`
 * of an activity this run calls, or `<workflowType>:<activity>.<before|after>` of an activity of a child run it starts
 * (a payment's ledger migration); the matrix kills the worker there. A point named in `externalKills` is not armed in
 * the worker: the harness itself SIGKILLs the worker process when that kill's moment comes.
 */
export interface Scenario {
  workflowType: string;
  /** Shown in the matrix. */
  label: string;
  points: string[];
  /**
   * The one cell of this workflow that the matrix runs when not whole (the kill right after the step's side effect);
   * a second scenario of a workflow that has one already has none (it runs in the full matrix only).
   */
  fastPoint?: string;
  /**
   * Points the harness carries out from outside, by name: `moment` resolves once the worker should die (e.g. while a
   * stage's processes run) with the processes that must die with it.
   */
  externalKills?: Record<string, (space: RunSpace) => Promise<LiveProcess[]>>;
  /**
   * Made before each run's platform, with or without a fault: what env() then names and the run's state is measured
   * against (the pay scenario's chain and seller, started once, and a fresh funded buyer wallet per run).
   */
  prepare?(): Promise<void>;
  /** What the scenario adds to the workers' environment (paths under the cell's FORGE_HOME). */
  env?(home: string): NodeJS.ProcessEnv;
  setup(forge: ForgeClient, space: RunSpace): Promise<void>;
  /** Starts the run and waits for its result (through a crash and a restart, in a cell). */
  run(forge: ForgeClient, space: RunSpace): Promise<RunResult>;
  /** What of the result must equal the uninterrupted run's (paths under `space.home` differ from run to run). */
  outcome(result: RunResult, run: { workflowId: string; runId: string }, space: RunSpace): Record<string, unknown>;
  /** State outside the database and agent-tools/ that the run changes (compared with the uninterrupted run's). */
  state?(space: RunSpace): Promise<Record<string, unknown>>;
  /** What the run may not leave behind, in words (must be empty after every run, with or without a fault). */
  leftovers?(space: RunSpace): Promise<string[]>;
}

/** Where one run of a scenario lives: its cell's FORGE_HOME, and the workers' environment (its task queues). */
export interface RunSpace {
  home: string;
  env: NodeJS.ProcessEnv;
}

export type RunResult = Record<string, unknown> & { workflowId: string };

const TOOL = 'chaos_tool';

/** A tool whose test waits `ms`, so the kill lands while the run is genuinely in its steps. */
export const chaosTool = (variant: string) => sleepyTool(TOOL, variant);

const deploy = (forge: ForgeClient, variant: string, ms = 10) => forge.deployTool({ name: TOOL, source: chaosTool(variant), testInput: { ms } });

async function expectActive(forge: ForgeClient, variant: string): Promise<void> {
  const result = await deploy(forge, variant);
  if (result.status !== 'active') throw new Error(`setup: deploying ${variant} ended ${result.status}: ${result.diagnostics.message}`);
}

const pick = (result: RunResult, keys: string[]) => Object.fromEntries(keys.map((k) => [k, result[k]]));

export const SCENARIOS: Scenario[] = [
  {
    workflowType: 'deployToolWorkflow',
    label: 'deploy v2 over v1',
    points: [
      'prepareDeployment.before',
      'prepareDeployment.after',
      // The test runs in the workflow task (FORGE_SANDBOX_TEST_HERE, on by default): a slot is free. It begins inside
      // the first step, beside the type check, and a quick one passes within that step's wait for it
      // (FIRST_STEP_TEST_WAIT_MS), so the same step commits and publishes too and these points fire inside
      // prepareDeployment. (On a machine slow enough for the test to outlast the wait, the next step, testAndCommitHere,
      // takes the test and commits: the same points, the same end state.)
      'testToolHere.before',
      'testToolHere.after',
      'commitVersion.before',
      'commitVersion.after',
      'publishTools.before',
      'publishTools.after',
    ],
    fastPoint: 'commitVersion.after',
    setup: (forge) => expectActive(forge, 'v1'),
    run: async (forge) => (await deploy(forge, 'v2', 10)) as unknown as RunResult,
    outcome: (r) => pick(r, ['status', 'version', 'previousVersion', 'verdict', 'unchanged']),
  },
  {
    workflowType: 'deployToolWorkflow',
    label: 'deploy v2 over v1, its test outlasting the first step',
    // A test of 5 s outlasts the first step's wait even behind a restarted worker's cold type checker (1-3 s): the
    // second step (testAndCommitHere) takes the running test and commits, and its end is a point of its own.
    points: ['testToolHere.after', 'commitVersion.after', 'testAndCommitHere.after'],
    setup: (forge) => expectActive(forge, 'v1'),
    run: async (forge) => (await deploy(forge, 'v2', 5_000)) as unknown as RunResult,
    outcome: (r) => pick(r, ['status', 'version', 'previousVersion', 'verdict', 'unchanged']),
  },
  {
    workflowType: 'deployToolWorkflow',
    label: 'deploy v2 over v1, tested on the sandbox queue',
    // Here the commit and the publish are one activity of their own (commitAndPublish), whose inner steps are reached
    // through the fault checkpoint rather than the interceptor: one point inside each.
    points: ['testTool.before', 'testTool.after', 'commitVersion.after', 'publishTools.before'],
    env: () => ({ FORGE_SANDBOX_TEST_HERE: 'off' }),
    setup: (forge) => expectActive(forge, 'v1'),
    run: async (forge) => (await deploy(forge, 'v2', 300)) as unknown as RunResult,
    outcome: (r) => pick(r, ['status', 'version', 'previousVersion', 'verdict', 'unchanged']),
  },
  {
    workflowType: 'rollbackToolWorkflow',
    label: 'roll back v3 to v2',
    points: ['activateEarlierVersion.before', 'activateEarlierVersion.after', 'publishTools.before', 'publishTools.after'],
    fastPoint: 'activateEarlierVersion.after',
    async setup(forge) {
      for (const v of ['v1', 'v2', 'v3']) await expectActive(forge, v);
    },
    run: async (forge) => (await forge.rollbackTool(TOOL)) as unknown as RunResult,
    outcome: (r) => pick(r, ['status', 'version', 'previousVersion']),
  },
  {
    workflowType: 'deleteToolWorkflow',
    label: 'delete a tool of 2 versions',
    points: ['removeTool.before', 'removeTool.after', 'publishTools.before', 'publishTools.after'],
    fastPoint: 'removeTool.after',
    async setup(forge) {
      for (const v of ['v1', 'v2']) await expectActive(forge, v);
    },
    run: async (forge) => (await forge.deleteTool(TOOL)) as unknown as RunResult,
    outcome: (r) => pick(r, ['status', 'previousVersion', 'removedVersions']),
  },
  {
    workflowType: 'migrateSchemaWorkflow',
    label: 'migrate: add a column and a table',
    points: ['validateMigration.before', 'validateMigration.after', 'applyMigration.before', 'applyMigration.after'],
    fastPoint: 'applyMigration.after',
    async setup(forge) {
      const r = await forge.migrateSchema({ name: 'chaos_base', sql: 'CREATE TABLE agent_chaos (id bigint PRIMARY KEY);' });
      if (r.status !== 'applied') throw new Error(`setup: the base migration ended ${r.status}: ${r.message}`);
    },
    run: async (forge) =>
      (await forge.migrateSchema({
        name: 'chaos_change',
        sql: 'ALTER TABLE agent_chaos ADD COLUMN note text;\nCREATE TABLE agent_chaos_log (id bigint, at timestamptz DEFAULT now());',
      })) as unknown as RunResult,
    // The result must say what this run did: `applied` by this very run, not `alreadyApplied` by "another".
    outcome: (r, run) => {
      const by = r.appliedBy as { workflowId?: string; runId?: string } | undefined;
      return { status: r.status, appliedByThisRun: by?.workflowId === run.workflowId && by?.runId === run.runId };
    },
  },
  promotionScenario,
  movedBranchPromotionScenario,
  reverifyScenario,
  reverifyQueuedScenario,
  reverifyBuiltinScenario,
  payScenario,
  payCancelledScenario,
];
