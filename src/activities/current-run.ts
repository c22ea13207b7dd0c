import { Context } from '@temporalio/activity';

/** A run of a workflow, as an activity's context names it. */
export type WorkflowRun = { workflowId: string; runId: string };

/** The workflow run of the activity that calls this, or undefined outside an activity (tests call steps bare). */
export function currentRun(): WorkflowRun | undefined {
  try {
    return Context.current().info.workflowExecution;
  } catch {
    return undefined;
  }
}
