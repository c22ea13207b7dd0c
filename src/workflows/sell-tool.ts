import { proxyActivities, upsertSearchAttributes, workflowInfo } from '@temporalio/workflow';
import type { SellActivities } from '../activities/sell-activities';
import type { SellInput, SellResult } from '../contract/pay-runs';
import { ForgeOutcomeKey } from '../contract/search-attributes';
import { Progress } from './progress';
import { refused } from './refusal';
import { ensureLedger, LEDGER_STEP } from './x402-ledger';

const sellSteps = proxyActivities<SellActivities>(LEDGER_STEP);

/**
 * Offers an active tool as a paid x402 endpoint of the worker's seller, or withdraws it (`forge sell`): the offer is a
 * row of the ledger's `agent_x402_offers` (the ledger made by its migration the first time), and the seller serves it
 * before the run answers. A tool that is not active, or a worker that cannot sell, is a refusal (the run ends FAILED
 * with the typed result, as every Forge refusal).
 */
export async function sellToolWorkflow(input: SellInput): Promise<SellResult> {
  const { workflowId } = workflowInfo();
  const progress = new Progress('sell', input.tool, ['ledger', 'offer']);
  progress.start('ledger');
  await ensureLedger();
  progress.done('ledger');
  progress.start('offer', input.stop ? 'withdraw the offer' : `${input.price} per call`);
  const outcome = await sellSteps.offerTool.executeWithOptions({ summary: input.stop ? `withdraw ${input.tool}` : `offer ${input.tool} at ${input.price}` }, [
    input,
  ]);
  const result: SellResult = { ...outcome, workflowId };
  if (outcome.status === 'refused') progress.failed('offer', outcome.reason);
  else progress.done('offer', outcome.url ?? outcome.status);
  progress.end(outcome.status, { message: outcome.reason ?? outcome.url });
  upsertSearchAttributes([{ key: ForgeOutcomeKey, value: outcome.status }]);
  return outcome.status === 'refused' ? refused(result, `sell refused: ${outcome.reason}`) : result;
}
