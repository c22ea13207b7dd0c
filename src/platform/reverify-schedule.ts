import { ScheduleAlreadyRunning, ScheduleOverlapPolicy, type Client, type ScheduleOptions, type ScheduleOptionsStartWorkflowAction } from '@temporalio/client';
import type { ForgeConfig } from '../config';
import { ForgeKindKey, ForgeSubjectKey } from '../contract/search-attributes';
import { REVERIFY_SCHEDULE_ID, REVERIFY_WORKFLOW_ID_PREFIX, type ReverifyToolsInput } from '../contract/reverify-runs';
import { WORKFLOW_TASK_TIMEOUT } from '../contract/workflow-task-timeout';
import type { reverifyToolsWorkflow } from '../workflows/reverify-tools';

/** The schedule as configured: every `FORGE_REVERIFY_INTERVAL`, overlap SKIP, starting ReverifyToolsWorkflow. */
function reverifyScheduleOptions(config: ForgeConfig): ScheduleOptions {
  const args: [ReverifyToolsInput] = [{ trigger: 'schedule' }];
  const every = formatInterval(config.reverify.intervalMs);
  // Typed by the workflow it starts (a type-only import: no workflow code loads here), so its name and args are checked.
  const action: ScheduleOptionsStartWorkflowAction<typeof reverifyToolsWorkflow> = {
    type: 'startWorkflow',
    workflowType: 'reverifyToolsWorkflow',
    workflowId: REVERIFY_WORKFLOW_ID_PREFIX,
    taskQueue: config.taskQueues.control,
    args,
    workflowTaskTimeout: WORKFLOW_TASK_TIMEOUT,
    typedSearchAttributes: [
      { key: ForgeKindKey, value: 'reverify' },
      { key: ForgeSubjectKey, value: 'tools' },
    ],
    staticSummary: `Re-verify every active tool (scheduled every ${every})`,
    staticDetails: [
      `**schedule:** \`${REVERIFY_SCHEDULE_ID}\`, every ${every}, overlap SKIP`,
      '**what:** each active version runs its stored sandbox test again; a failure is retested at once (a pass is flaky), a second failure quarantines the tool or degrades it to the newest earlier version that passes',
    ].join('\n'),
  };
  return {
    scheduleId: REVERIFY_SCHEDULE_ID,
    spec: { intervals: [{ every: config.reverify.intervalMs }] },
    action,
    policies: { overlap: ScheduleOverlapPolicy.SKIP, catchupWindow: '1 minute' },
    memo: { forge: 'reverify', intervalMs: config.reverify.intervalMs },
  };
}

/**
 * Creates the `forge-reverify` schedule, or, when it exists (ScheduleAlreadyRunning), updates its spec, action and
 * policies to the configuration: every platform start leaves exactly one schedule, as configured now. A pause and its
 * note are kept: an operator's `forge reverify --pause` outlives restarts.
 */
export async function ensureReverifySchedule(client: Client, config: ForgeConfig): Promise<'created' | 'updated'> {
  const options = reverifyScheduleOptions(config);
  try {
    await client.schedule.create(options);
    return 'created';
  } catch (err) {
    if (!(err instanceof ScheduleAlreadyRunning)) throw err;
  }
  await client.schedule.getHandle(REVERIFY_SCHEDULE_ID).update((previous) => ({
    ...previous,
    spec: options.spec,
    action: options.action,
    policies: { ...previous.policies, ...options.policies },
  }));
  return 'updated';
}

/** 3600000 → `1h`, 90000 → `90s`: how the schedule's summary says its interval. */
function formatInterval(ms: number): string {
  for (const [unit, size] of [
    ['d', 86_400_000],
    ['h', 3_600_000],
    ['m', 60_000],
    ['s', 1_000],
  ] as const) {
    if (ms % size === 0) return `${ms / size}${unit}`;
  }
  return `${ms}ms`;
}
