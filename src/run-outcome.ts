import type { ForgeClient, RunSummary } from './client';

/*
 * What a run's outcome is as an agent reads it, for the two front ends that list runs over the SDK: `forge runs`
 * (src/commands/runs.ts) and the MCP server's list_runs (src/mcp/operations.ts). Here, beside the SDK, so that neither
 * front end imports the other.
 */

/** How long a listing waits for a running run to say its stage (no worker answering: it shows `running`). */
const STAGE_QUERY_MS = 2_000;

/** One listed run: a RunSummary whose outcome is always filled, and its stage (where a run still going is). */
export interface RunRow extends RunSummary {
  outcome: string;
  stage?: string;
}

/**
 * Fills the outcome of every run: a finished run's ForgeOutcome (a refused run ends FAILED with its outcome, e.g.
 * `rejected`; a run that failed of a fault upserts `failed`); for a cancelled, terminated or timed-out run, that status
 * (whatever it had upserted before); for a run still going, `running`, with its current stage asked through the
 * `progress` query.
 */
export async function withOutcome(forge: ForgeClient, run: RunSummary): Promise<RunRow> {
  const status = run.status.toLowerCase();
  if (status === 'completed' || status === 'failed') return { ...run, outcome: run.outcome ?? status };
  if (status !== 'running') return { ...run, outcome: status === 'cancelled' ? 'canceled' : status };
  // ForgeStage says where a run is; a run started before that attribute existed is asked through its query.
  const stage = run.stage ?? (await stageOf(forge, run.workflowId));
  return { ...run, outcome: 'running', ...(stage && stage !== 'starting' ? { stage } : {}) };
}

async function stageOf(forge: ForgeClient, workflowId: string): Promise<string | undefined> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<undefined>((resolve) => (timer = setTimeout(() => resolve(undefined), STAGE_QUERY_MS)));
  const query = forge.temporal.workflow
    .getHandle(workflowId)
    .query<{ stage?: string }>('progress')
    .then((p) => p?.stage)
    .catch(() => undefined);
  try {
    return await Promise.race([query, timeout]);
  } finally {
    clearTimeout(timer);
  }
}
