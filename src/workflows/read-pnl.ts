import { proxyActivities } from '@temporalio/workflow';
import type { PayActivities } from '../activities/pay-activities';
import type { PnlResult } from '../contract/pay-runs';

const reads = proxyActivities<PayActivities>({ startToCloseTimeout: '30 seconds', retry: { maximumAttempts: 3 } });

/** The P&L for a client that cannot reach the worker's read API (another host): a query run, as listMigrations has. */
export async function readPnlWorkflow(input: { by: 'tool' | 'day' }): Promise<PnlResult> {
  return reads.readPnl.executeWithOptions({ summary: `read the x402 P&L by ${input.by}` }, [input]);
}
