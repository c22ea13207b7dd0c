import { defineSignal, proxyActivities, setHandler, sleep, upsertSearchAttributes, workflowInfo } from '@temporalio/workflow';
import type { AuthorizationVerdict, ChainDecision, PaidExchange, PayActivities, PaymentOnChain } from '../activities/pay-activities';
import {
  CHAIN_PATIENCE_SECONDS,
  PAID_ANSWER_SIGNAL,
  SETTLEMENT_GRACE_SECONDS,
  type PaidResponse,
  type PayInput,
  type PayResult,
  type X402PaymentRequirements,
} from '../contract/pay-runs';
import { ForgeOutcomeKey } from '../contract/search-attributes';
import { Progress } from './progress';
import { refused } from './refusal';
import { runToTheEnd } from './run-to-the-end';
import { ensureLedger, LEDGER_STEP } from './x402-ledger';

/** The stages of a pay run, in order. */
const PAY_STAGES = ['terms', 'policy', 'sign', 'send', 'record'] as const;

/**
 * Steps that read the ledger, the policy or the chain: retried without limit (a database that is down makes the run
 * wait, then finish), each bounded well above what one takes.
 */
const ledgerSteps = proxyActivities<PayActivities>(LEDGER_STEP);

/**
 * Steps that talk to the resource: a few tries (an HTTP exchange is bounded at 30 s), then the run decides from what
 * it knows. Sending repeats the same signed payload, so its retries can never pay twice.
 */
const httpSteps = proxyActivities<PayActivities>({
  startToCloseTimeout: '45 seconds',
  retry: { initialInterval: '500 milliseconds', backoffCoefficient: 2, maximumInterval: '5 seconds', maximumAttempts: 4 },
});

/** Steps that read or write the chain: bounded, so that a chain out of reach makes the run report `pending`. */
const chainSteps = proxyActivities<PayActivities>({
  startToCloseTimeout: '90 seconds',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '10 seconds', maximumAttempts: 3 },
});

/**
 * Pays for one HTTP resource over x402, exactly once, within the spend policy (CLI.md `forge pay`):
 * terms (the unpaid request's 402) → policy (the spend policy, then an atomic reservation against the daily budget in
 * the ledger) → sign (once; the payload is kept in this run's history) → send (that same payload on every try) →
 * record (the settlement, from the resource's answer or else the chain: settled or failed, never left reserved).
 *
 * The ledger's tables are created the first time through Forge's own migration workflow (a child run), under the same
 * schema policy as every agent migration. Ends `paid` (completed), `refused` or `failed` (ended FAILED, the result in
 * the failure's details, as every refused Forge run). Not cancellable past signing: {@link runToTheEnd}.
 */
export function payWorkflow(input: PayInput): Promise<PayResult> {
  return runToTheEnd(() => pay(input));
}

async function pay(input: PayInput): Promise<PayResult> {
  const { workflowId } = workflowInfo();
  const request = { url: input.url, method: input.method, headers: input.headers, body: input.body };
  const progress = new Progress('pay', input.url, PAY_STAGES);
  const end = (result: PayResult, at?: string): PayResult => {
    progress.end(result.status, { at, message: result.reason ?? (result.amount ? `${result.amount} of ${result.asset} to ${result.payTo}` : undefined) });
    upsertSearchAttributes([{ key: ForgeOutcomeKey, value: result.status }]);
    return result.status === 'paid' ? result : refused(result, `payment ${result.status}: ${result.reason ?? ''}`);
  };

  // The settled answer a send attempt handed over before returning (see sendPayment): the first one is what was paid for.
  let paidAnswer: PaidExchange | undefined;
  setHandler(defineSignal<[PaidExchange]>(PAID_ANSWER_SIGNAL), (answer) => {
    paidAnswer ??= answer;
  });

  progress.start('terms', `${request.method ?? 'GET'} ${input.url} unpaid`);
  await ensureLedger();
  let probe;
  try {
    probe = await httpSteps.probePayment.executeWithOptions({ summary: `ask ${input.url} for its payment terms` }, [request]);
  } catch (err) {
    progress.failed('terms', causeOf(err));
    return end({ status: 'failed', workflowId, reason: `could not get the payment terms: ${causeOf(err)}` });
  }
  if (probe.kind === 'response') {
    progress.done('terms', `HTTP ${probe.response.httpStatus}: no payment asked`);
    return end({ status: 'paid', workflowId, amount: '0', ...responseFields(probe.response), reason: 'the resource asked for no payment' });
  }
  const { paymentRequired } = probe;
  progress.done('terms', `${paymentRequired.accepts.length} payment option(s)`);

  progress.start('policy');
  const reserved = await ledgerSteps.reservePayment.executeWithOptions({ summary: 'check the spend policy and reserve the amount' }, [
    { workflowId, url: input.url, paymentRequired, maxAmount: input.maxAmount },
  ]);
  if (!reserved.ok) {
    progress.failed('policy', reserved.reason);
    return end({ status: 'refused', workflowId, limit: reserved.limit, reason: reserved.reason, ...termsOf(reserved.requirement) });
  }
  const { requirement } = reserved;
  progress.done('policy', `${requirement.amount} reserved`);

  progress.start('sign');
  let signed;
  try {
    signed = await ledgerSteps.signPayment.executeWithOptions({ summary: `sign ${requirement.amount} to ${requirement.payTo}` }, [
      { workflowId, paymentRequired, requirement },
    ]);
  } catch (err) {
    const reason = `could not sign the payment: ${causeOf(err)}`;
    progress.failed('sign', reason);
    await ledgerSteps.releasePayment({ workflowId, reason });
    return end({ status: 'failed', workflowId, reason, ...termsOf(requirement) });
  }
  progress.done('sign', `nonce ${signed.nonce.slice(0, 10)}…`);

  progress.start('send', `${request.method ?? 'GET'} ${input.url} with the payment`);
  let exchange;
  let sendError: string | undefined;
  try {
    exchange = await httpSteps.sendPayment.executeWithOptions({ summary: `send the paid request to ${input.url}` }, [{ request, payment: signed }]);
    progress.done('send', `HTTP ${exchange.response.httpStatus}`);
  } catch (err) {
    sendError = causeOf(err);
    progress.failed('send', sendError);
  }
  // An attempt that was paid and answered, then died before Temporal recorded its result, handed the answer over; the
  // retry that followed sent the used payload again and was refused (HTTP 402). The caller gets what it paid for.
  if (paidAnswer && !exchange?.settlement?.success) {
    exchange = paidAnswer;
    sendError = undefined;
    progress.done('send', `HTTP ${exchange.response.httpStatus} (the answer of an attempt that died before it was recorded)`);
  }

  progress.start('record', 'ask the chain whether the authorization was used');
  const payment: PaymentOnChain = { requirement, nonce: signed.nonce, payer: signed.payer, validBefore: signed.validBefore };
  const decided = await decideFromChain(payment, exchange, sendError);
  const response = exchange ? responseFields(exchange.response) : {};
  const terms = { ...termsOf(requirement), ...response, idempotencyKey: input.idempotencyKey };
  if (decided.status === 'pending') {
    progress.failed('record', decided.reason);
    return end({ status: 'pending', workflowId, ...terms, reason: decided.reason }, 'record');
  }
  const outcome = await ledgerSteps.recordDecision.executeWithOptions({ summary: 'write what the chain decided in the ledger' }, [
    { workflowId, payer: signed.payer, decision: decided },
  ]);
  if (outcome.status === 'paid') {
    progress.done('record', `settled in ${outcome.txHash?.slice(0, 12) ?? '?'}…`);
    return end({ status: 'paid', workflowId, ...terms, txHash: outcome.txHash, reason: outcome.reason });
  }
  progress.failed('record', outcome.reason);
  return end({ status: 'failed', workflowId, ...terms, reason: outcome.reason }, 'send');
}

/**
 * Asks the chain until it decides: settled (paid), cancelled or expired (failed: it can never move money). A seller's
 * error, silence or receipt decides nothing. An authorization still open after the grace is cancelled on the chain by
 * Forge; when the cancellation cannot be sent, or the chain cannot be read, the run reports `pending`, the amount
 * staying reserved until reconciliation decides it (by the authorization's expiry at the latest).
 */
async function decideFromChain(
  payment: PaymentOnChain,
  exchange: PaidExchange | undefined,
  sendError: string | undefined,
): Promise<ChainDecision | { status: 'pending'; reason: string }> {
  const claimedTx = exchange?.settlement?.success ? exchange.settlement.transaction : undefined;
  const answered = exchange
    ? `the seller answered HTTP ${exchange.response.httpStatus}${claimedTx ? ` with a settlement receipt naming ${claimedTx}` : exchange.settlement ? ' and a failed settlement' : ' without a settlement'}`
    : `the seller could not be reached with the payment (${sendError ?? 'no response'})`;
  const started = Date.now();
  let unreadableSince: number | undefined;
  let cancel: { sent: boolean; txHash?: string; reason?: string } | undefined;
  for (let check = 0; ; check++) {
    let verdict: AuthorizationVerdict;
    try {
      verdict = await chainSteps.checkPayment.executeWithOptions({ summary: `ask the chain about nonce ${payment.nonce.slice(0, 10)}…` }, [
        { ...payment, claimedTx },
      ]);
      unreadableSince = undefined;
    } catch (err) {
      unreadableSince ??= Date.now();
      if (Date.now() - unreadableSince >= CHAIN_PATIENCE_SECONDS * 1000) {
        return {
          status: 'pending',
          reason: `${answered}; the chain cannot be read (${causeOf(err)}): the amount stays reserved until reconciliation reads it, at the latest when the authorization expires (${isoOf(payment.validBefore)})`,
        };
      }
      await sleep('5 seconds');
      continue;
    }
    switch (verdict.state) {
      case 'settled': {
        const notes = [
          claimedTx && claimedTx.toLowerCase() !== verdict.txHash.toLowerCase()
            ? `the seller's receipt named ${claimedTx}, the chain shows ${verdict.txHash}`
            : undefined,
          !exchange
            ? `${answered}, but the payment settled on the chain`
            : exchange.response.httpStatus >= 400
              ? `the payment settled on the chain, but ${answered}`
              : undefined,
        ].filter((n): n is string => n !== undefined);
        return { status: 'settled', txHash: verdict.txHash, note: notes.length > 0 ? notes.join('; ') : undefined };
      }
      case 'cancelled':
        return {
          status: 'failed',
          reason: `${answered}, and the chain shows no settlement${claimedTx ? ` (no such transfer in ${claimedTx})` : ''}: Forge cancelled the authorization on the chain${cancel?.txHash ? ` in ${cancel.txHash}` : ''}, so nothing can be paid with it; the reservation is released`,
        };
      case 'expired':
        return { status: 'failed', reason: `${answered}, and the authorization expired unused on the chain: nothing was paid; the reservation is released` };
      case 'open':
        break;
    }
    if (cancel && !cancel.sent) {
      return {
        status: 'pending',
        reason: `${answered}, and the chain shows no settlement; Forge could not cancel the authorization (${cancel.reason}): the amount stays reserved until it expires (${isoOf(payment.validBefore)}), when reconciliation releases it`,
      };
    }
    if (!cancel && Date.now() - started >= SETTLEMENT_GRACE_SECONDS * 1000) {
      try {
        cancel = await chainSteps.cancelPayment.executeWithOptions({ summary: `cancel nonce ${payment.nonce.slice(0, 10)}… on the chain` }, [payment]);
      } catch (err) {
        cancel = { sent: false, reason: causeOf(err) };
      }
      continue;
    }
    await sleep(check < 10 ? '1 second' : '3 seconds');
  }
}

const isoOf = (unixSeconds: number) => new Date(unixSeconds * 1000).toISOString();

function termsOf(requirement: X402PaymentRequirements | undefined): Pick<PayResult, 'amount' | 'asset' | 'network' | 'payTo'> {
  return requirement ? { amount: requirement.amount, asset: requirement.asset, network: requirement.network, payTo: requirement.payTo } : {};
}

function responseFields(response: PaidResponse): Pick<PayResult, 'httpStatus' | 'headers' | 'body' | 'bodyTruncated'> {
  return { httpStatus: response.httpStatus, headers: response.headers, body: response.body, ...(response.bodyTruncated ? { bodyTruncated: true } : {}) };
}

/** The innermost message of an activity failure (what the operator needs, not the wrapper's "Activity task failed"). */
function causeOf(err: unknown): string {
  let e = err as { message?: string; cause?: unknown } | undefined;
  while (e?.cause && typeof e.cause === 'object') e = e.cause as typeof e;
  return e?.message ?? String(err);
}
