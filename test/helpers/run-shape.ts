import type { temporal as proto } from '@temporalio/proto';
import type { Client } from '@temporalio/client';

/** A deployment's shape as its history records it: the local activities it ran and its search-attribute upserts. */
export interface RunShape {
  localActivities: string[];
  upserts: Record<string, unknown>[];
  /** The ForgeStage the client set at the start. */
  firstStage: unknown;
  /** `patched()` markers (none expected: a patch costs a marker and an upsert per run). */
  patches: number;
}

const json = (p?: proto.api.common.v1.IPayload | null) => JSON.parse(Buffer.from(p?.data ?? []).toString()) as unknown;

/** The activity type a local activity's marker names (in its `data` detail), or undefined for any other event. */
export function localActivityOf(event: proto.api.history.v1.IHistoryEvent): string | undefined {
  const marker = event.markerRecordedEventAttributes;
  const data = marker?.markerName === 'core_local_activity' ? marker.details?.data?.payloads?.[0] : undefined;
  if (!data) return undefined;
  const named = json(data) as { activity_type?: string; activityType?: string };
  return named.activity_type ?? named.activityType;
}

/** The activity types of the local activities a history recorded, in order. */
export function localActivitiesOf(history: proto.api.history.v1.IHistory): string[] {
  return (history.events ?? []).flatMap((e) => localActivityOf(e) ?? []);
}

export async function runShape(client: Client, workflowId: string): Promise<RunShape> {
  const history = await client.workflow.getHandle(workflowId).fetchHistory();
  const events = history.events ?? [];
  const localActivities = localActivitiesOf(history);
  const upserts = events
    .map((e) => e.upsertWorkflowSearchAttributesEventAttributes?.searchAttributes?.indexedFields)
    .filter((f) => f)
    .map((f) => Object.fromEntries(Object.entries(f!).map(([k, v]) => [k, json(v)])));
  const startedWith = events[0].workflowExecutionStartedEventAttributes?.searchAttributes?.indexedFields ?? {};
  const patches = events.filter((e) => e.markerRecordedEventAttributes?.markerName === 'core_patch').length;
  return { localActivities, upserts, firstStage: json(startedWith.ForgeStage), patches };
}

/**
 * The two shapes of a deployment tested where its workflow task runs. The client set the first stage at the start, so
 * the run upserts none for it and calls no patch. Stages run inside a step upsert nothing of their own; the last goes
 * with the outcome, so the Web UI's list ends as it did with an upsert per stage.
 * - one step: the test passed within the first step's wait for it, and that step committed too;
 * - two steps: the second (testAndCommitHere) took the running test and committed, and `test` was upserted as it began.
 */
export const DEPLOY_SHAPES = {
  oneStep: { localActivities: ['prepareDeployment'], upserts: [{ ForgeStage: 'notify', ForgeOutcome: 'active' }], firstStage: 'validate', patches: 0 },
  twoSteps: {
    localActivities: ['prepareDeployment', 'testAndCommitHere'],
    upserts: [{ ForgeStage: 'test' }, { ForgeStage: 'notify', ForgeOutcome: 'active' }],
    firstStage: 'validate',
    patches: 0,
  },
} satisfies Record<string, RunShape>;

/** Where a run chain's activities ran: the local activities' types, and the types and queues of those scheduled on the server. */
export interface ActivityPlacement {
  local: string[];
  scheduled: { type: string; taskQueue: string }[];
}

/** The activities of a workflow's every run, from `firstRunId` through each continue-as-new, in order. */
export async function activityPlacementOf(client: Client, workflowId: string, firstRunId: string): Promise<ActivityPlacement> {
  const placement: ActivityPlacement = { local: [], scheduled: [] };
  for (let runId: string | undefined = firstRunId; runId;) {
    const history = await client.workflow.getHandle(workflowId, runId).fetchHistory();
    placement.local.push(...localActivitiesOf(history));
    for (const e of history.events ?? []) {
      const s = e.activityTaskScheduledEventAttributes;
      if (s) placement.scheduled.push({ type: s.activityType?.name ?? '', taskQueue: s.taskQueue?.name ?? '' });
    }
    runId = history.events?.at(-1)?.workflowExecutionContinuedAsNewEventAttributes?.newExecutionRunId ?? undefined;
  }
  return placement;
}
