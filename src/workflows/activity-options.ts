import { ActivityCancellationType, proxyActivities, proxyLocalActivities, type ActivityOptions, type LocalActivityOptions } from '@temporalio/workflow';
import type { DeployHereActivities } from '../activities/deploy-here';
import type { MigrationActivities } from '../activities/migration-activities';
import type { PromotionActivities } from '../activities/promotion-activities';
import type { ReverifySandboxActivities } from '../activities/reverify-activities';
import type { SandboxActivities } from '../activities/sandbox-activities';
import type { ToolActivities } from '../activities/tool-activities';
import { FAILURE_TYPES, FailureType } from '../contract/failures';

/**
 * A cancelled run waits for the step in flight to end before it goes on: a step that commits after its run already
 * ended as cancelled (the saga's restore done, the caller told "cancelled") would leave the state half of each, and a
 * sandbox test must have killed its processes before the run ends. Set explicitly because the TypeScript SDK's real
 * default is TRY_CANCEL (the step's promise fails at once while the step goes on running), although its API reference
 * says WAIT_CANCELLATION_COMPLETED (temporalio/sdk-typescript#2442).
 */
const WAIT_FOR_THE_STEP = ActivityCancellationType.WAIT_CANCELLATION_COMPLETED;

/**
 * Fast steps (validate, compile, commit, publish): local activities on the control worker, which holds the database.
 * Local, because each is a few milliseconds of work and a server round trip per step would dominate a deployment's
 * latency. Retried without limit with capped backoff: a database that is down makes the run wait, then finish.
 */
export const FAST_STEP: LocalActivityOptions = {
  startToCloseTimeout: '30 seconds',
  cancellationType: WAIT_FOR_THE_STEP,
  // No maximumAttempts: unlimited, bounded only by the non-retryable verdict types below.
  retry: {
    initialInterval: '200 milliseconds',
    backoffCoefficient: 2,
    maximumInterval: '10 seconds',
    nonRetryableErrorTypes: [...FAILURE_TYPES],
  },
};

/**
 * Bounded steps (the sandbox test): a regular activity on the sandbox task queue, hard start-to-close above the
 * sandbox's own platform maximum, heartbeats, few attempts (a verdict is non-retryable anyway).
 */
function boundedStep(taskQueue: string, sandboxMaxTimeoutMs: number): ActivityOptions {
  return {
    taskQueue,
    startToCloseTimeout: sandboxMaxTimeoutMs + 30_000,
    // The activity learns of a cancellation at its next heartbeat and kills the tree before it reports.
    cancellationType: WAIT_FOR_THE_STEP,
    // The activity beats every second: a worker killed mid-test is noticed within 3 s, not Temporal's usual 10.
    heartbeatTimeout: '3 seconds',
    retry: { initialInterval: '200 milliseconds', maximumAttempts: 3, nonRetryableErrorTypes: [FailureType.toolRejected] },
  };
}

/**
 * How tool workflows call the tool activities (createToolActivities): local activities, fast steps. Like the other
 * `...Steps` here, a workflow-side proxy; the steps those activities run inside themselves are ToolInnerSteps.
 */
export const toolSteps = proxyLocalActivities<ToolActivities>(FAST_STEP);

export function sandboxSteps(taskQueue: string, sandboxMaxTimeoutMs: number) {
  return proxyActivities<SandboxActivities>(boundedStep(taskQueue, sandboxMaxTimeoutMs));
}

/**
 * The sandbox test and the commit after it as a local activity, where the workflow task runs (testAndCommitHere:
 * src/activities/deploy-here.ts): the same bound and retries as the test on the sandbox queue. A worker killed in it
 * is noticed by the workflow task timeout (2 s), as for every local step.
 */
function hereStep(sandboxMaxTimeoutMs: number): LocalActivityOptions {
  const { startToCloseTimeout, cancellationType, retry } = boundedStep('', sandboxMaxTimeoutMs);
  return { startToCloseTimeout, cancellationType, retry };
}

export function deployHereSteps(sandboxMaxTimeoutMs: number) {
  return proxyLocalActivities<DeployHereActivities>(hereStep(sandboxMaxTimeoutMs));
}

/**
 * Re-verification's tests: as local activities where the run's workflow task runs when its batch says so (`testsHere`,
 * FORGE_SANDBOX_TEST_HERE), else on the sandbox queue. Here, a test's result reaches the workflow without the server's
 * three events and two task dispatches per test, which cost the dev server ~13 ms of CPU a tool (BENCHMARKS.md); the
 * run's tests then stay on the worker that holds the run, where the queue would spread them over every sandbox worker.
 */
export function reverifySandboxSteps(placement: { taskQueue: string; maxTimeoutMs: number; testsHere?: boolean }) {
  return placement.testsHere
    ? proxyLocalActivities<ReverifySandboxActivities>(hereStep(placement.maxTimeoutMs))
    : proxyActivities<ReverifySandboxActivities>(boundedStep(placement.taskQueue, placement.maxTimeoutMs));
}

export const migrationSteps = proxyLocalActivities<MigrationActivities>(FAST_STEP);

/**
 * The migration's apply step: a fast step whose start-to-close covers the worst case the database's own limits
 * allow (waiting `lock_timeout` and running `statement_timeout` for each statement), so Temporal never abandons an
 * attempt that PostgreSQL is still bounding; an attempt it does abandon is harmless (the retry waits on the per-name
 * lock and then finds the row).
 */
export function applyMigrationStep(limits: { lockTimeoutMs: number; statementTimeoutMs: number }, statements: number) {
  return proxyLocalActivities<MigrationActivities>({
    ...FAST_STEP,
    startToCloseTimeout: Math.max(1, statements) * (limits.lockTimeoutMs + limits.statementTimeoutMs) + 30_000,
  });
}

/**
 * A core-table index built CONCURRENTLY (buildCoreIndex): a regular activity on the control queue (this workflow's),
 * where the database is, because it heartbeats its progress while a build of a big table runs for minutes: a worker
 * killed in it is noticed within the heartbeat timeout, and the retry ends the old build's session, drops the INVALID
 * index it left and builds again. Bounded by the statement timeout plus the waits for locks; retried without limit
 * until a verdict.
 */
export function onlineIndexSteps(limits: { lockTimeoutMs: number; statementTimeoutMs: number }) {
  return proxyActivities<MigrationActivities>({
    startToCloseTimeout: limits.statementTimeoutMs + 4 * limits.lockTimeoutMs + 30_000,
    heartbeatTimeout: '10 seconds',
    cancellationType: WAIT_FOR_THE_STEP,
    retry: { initialInterval: '500 milliseconds', backoffCoefficient: 2, maximumInterval: '10 seconds', nonRetryableErrorTypes: [...FAILURE_TYPES] },
  });
}

/**
 * Promotion steps: regular activities, because they run where the repository and the run's worktree are. The first
 * (`planPromotion`) goes to the shared promotion queue; every later one to the queue of the worker that took it
 * (`hostQueue`, samples-typescript's worker-specific task queues), so a whole run stays on the host holding its
 * worktree. A worker killed and restarted on that host picks the run up again. Git steps are bounded by the git
 * core's per-command timeout; they retry (idempotent) until a verdict. They heartbeat every second: a worker killed in
 * one is noticed within 3 s, not at the start-to-close timeout (a promotion killed right after its merge used to wait
 * the whole 10 minutes before the restarted worker could answer it).
 */
const PROMOTION_STEP: ActivityOptions = {
  startToCloseTimeout: '10 minutes',
  heartbeatTimeout: '3 seconds',
  cancellationType: WAIT_FOR_THE_STEP,
  retry: { initialInterval: '500 milliseconds', maximumInterval: '10 seconds', maximumAttempts: 20, nonRetryableErrorTypes: [FailureType.promotionRejected] },
};

export function promotionSteps(taskQueue: string) {
  return proxyActivities<PromotionActivities>({ ...PROMOTION_STEP, taskQueue });
}

/**
 * A verification stage: as long as its commands may run, plus a margin; heartbeats every second, so a killed worker
 * is noticed within 5 s and the stage runs again (a fresh tree in the same worktree) on the restarted worker.
 */
export function stageStep(taskQueue: string, maxRunMs: number) {
  return proxyActivities<PromotionActivities>({
    ...PROMOTION_STEP,
    taskQueue,
    startToCloseTimeout: maxRunMs + 60_000,
    heartbeatTimeout: '5 seconds',
    retry: { ...PROMOTION_STEP.retry, maximumAttempts: 3 },
  });
}
