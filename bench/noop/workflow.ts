import { proxyLocalActivities } from '@temporalio/workflow';

const { noop } = proxyLocalActivities<{ noop(): Promise<void> }>({ startToCloseTimeout: '10 seconds' });

/** Temporal's own floor for a run: one workflow, one no-op local activity (issue 15's yardstick). */
export async function noopWorkflow(): Promise<void> {
  await noop();
}
