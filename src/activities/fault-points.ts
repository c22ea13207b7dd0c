import { Context } from '@temporalio/activity';
import { formatFaultPoint, SALE_FAULT_SCOPE, SALE_FAULT_STEPS, type FaultMoment, type FaultPoint, type SaleCheckpoint } from '../contract/fault-points';

/**
 * Fault injection (src/contract/fault-points.ts says what a point is). Unarmed, the activities are left untouched:
 * it costs nothing.
 */

/** How the process dies at a fault point; SIGKILL leaves no chance to clean up, which is the point. */
export type Killer = (point: FaultPoint) => void;

const sigkillSelf: Killer = (point) => {
  process.stderr.write(`forge: fault injection: SIGKILL at ${formatFaultPoint(point)}\n`);
  process.kill(process.pid, 'SIGKILL');
};

/**
 * Arms the fault points on the activities and single steps of one worker, IN PLACE, so that a combined activity
 * (commitAndPublish) that calls its single steps through their object (`steps.commitVersion`) reaches their points.
 * A point naming an activity no factory defines is an error at start-up, not a cell that silently never fires.
 */
export function armFaultPoints<T extends object>(groups: T[], allPoints: FaultPoint[], kill: Killer = sigkillSelf): void {
  const points = allPoints.filter((p) => p.workflowType !== SALE_FAULT_SCOPE); // saleFaults() arms those
  if (points.length === 0) return;
  const known = new Set(groups.flatMap((g) => Object.keys(g)));
  for (const p of points) {
    if (!known.has(p.activity)) {
      throw new Error(`FORGE_FAULT_KILL_AT names ${formatFaultPoint(p)}, but no activity is called ${p.activity}; known: ${[...known].sort().join(', ')}`);
    }
  }
  const fire = (activity: string, moment: FaultMoment) => {
    const point = points.find((p) => p.activity === activity && p.moment === moment && p.workflowType === Context.current().info.workflowType);
    if (point) kill(point);
  };
  for (const group of groups) {
    const table = group as Record<string, unknown>;
    for (const [name, fn] of Object.entries(table)) {
      if (typeof fn !== 'function' || !points.some((p) => p.activity === name)) continue;
      const original = fn as (...args: unknown[]) => Promise<unknown>;
      table[name] = async (...args: unknown[]) => {
        fire(name, 'before');
        const result = await original(...args);
        fire(name, 'after');
        return result;
      };
    }
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
