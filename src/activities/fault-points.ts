import { Context } from '@temporalio/activity';
import type { ActivityInterceptorsFactory } from '@temporalio/worker';
import {
  formatFaultPoint,
  SALE_FAULT_SCOPE,
  SALE_FAULT_STEPS,
  type FaultMoment,
  type FaultPoint,
  type SaleCheckpoint,
  type StepCheckpoint,
} from '../contract/fault-points';

/**
 * Fault injection (src/contract/fault-points.ts says what a point is). Nothing here rewrites an activity: the worker
 * registers an activity interceptor that fires the points of the activities it runs, and the factories of activities
 * that run steps inside themselves take a checkpoint they call around each step. Unarmed, the worker has neither.
 */

/** How the process dies at a fault point; SIGKILL leaves no chance to clean up, which is the point. */
export type Killer = (point: FaultPoint) => void;

const sigkillSelf: Killer = (point) => {
  process.stderr.write(`forge: fault injection: SIGKILL at ${formatFaultPoint(point)}\n`);
  process.kill(process.pid, 'SIGKILL');
};

/** The armed points of one worker, as the two hooks that fire them. */
export interface FaultInjection {
  /**
   * For WorkerOptions.interceptors.activity, after the others (innermost, so a point fires where the activity function
   * itself starts and returns): fires `<workflowType>:<activityType>.before` and `.after` of each activity the worker
   * runs, local activities included (the SDK runs them through the same interceptors, `info.isLocal` set).
   */
  interceptor: ActivityInterceptorsFactory;
  /** For the factories of activities that run steps inside themselves (`checkpoint` in their dependencies). */
  checkpoint: StepCheckpoint;
}

/**
 * The points among `points` that are not a sale's (saleFaults() arms those), as hooks; undefined when there are none,
 * so that an unarmed worker registers no interceptor and its activities call no checkpoint.
 */
export function armFaultPoints(points: FaultPoint[], kill: Killer = sigkillSelf): FaultInjection | undefined {
  const armed = points.filter((p) => p.workflowType !== SALE_FAULT_SCOPE);
  if (armed.length === 0) return undefined;
  const fire = (workflowType: string | undefined, name: string, moment: FaultMoment) => {
    const point = armed.find((p) => p.activity === name && p.moment === moment && p.workflowType === workflowType);
    if (point) kill(point);
  };
  return {
    interceptor: (ctx) => ({
      inbound: {
        async execute(input, next) {
          const { workflowType, activityType } = ctx.info;
          fire(workflowType, activityType, 'before');
          const result = await next(input);
          fire(workflowType, activityType, 'after');
          return result;
        },
      },
    }),
    checkpoint: (step, moment) => fire(Context.current().info.workflowType, step, moment),
  };
}

/**
 * Refuses, at start-up, a point naming neither an activity the worker registers nor a step an activity runs inside
 * itself: a typo is an error, not a chaos cell that silently never fires. Sale points are saleFaults()' to check.
 */
export function checkFaultPoints(points: FaultPoint[], names: { activities: Iterable<string>; steps: Iterable<string> }): void {
  const known = new Set([...names.activities, ...names.steps]);
  for (const p of points) {
    if (p.workflowType === SALE_FAULT_SCOPE || known.has(p.activity)) continue;
    throw new Error(
      `FORGE_FAULT_KILL_AT names ${formatFaultPoint(p)}, but no activity or step of one is called ${p.activity}; known: ${[...known].sort().join(', ')}`,
    );
  }
}

/**
 * The `sale:` points among `points`, as the hook the seller calls around its steps; undefined when none is armed.
 * A point naming no step of a sale is an error at start-up, as for activities.
 */
export function saleFaults(points: FaultPoint[], kill: Killer = sigkillSelf): SaleCheckpoint | undefined {
  const armed = points.filter((p) => p.workflowType === SALE_FAULT_SCOPE);
  for (const p of armed) {
    if (!(SALE_FAULT_STEPS as readonly string[]).includes(p.activity)) {
      throw new Error(`FORGE_FAULT_KILL_AT names ${formatFaultPoint(p)}, but a sale has no step ${p.activity}; known: ${SALE_FAULT_STEPS.join(', ')}`);
    }
  }
  if (armed.length === 0) return undefined;
  return (step, moment) => {
    const point = armed.find((p) => p.activity === step && p.moment === moment);
    if (point) kill(point);
  };
}
