import type { Ledger } from './ledger';
import { authorizationOnChain } from './payer';
import type { Hex } from './viem';

/**
 * How old a `reserved` row must be before reconciliation decides it. A pay run records its outcome within minutes;
 * and a signed authorization is valid for at most MAX_AUTHORIZATION_SECONDS (the spend policy refuses longer ones),
 * so past this age the chain's answer is final: a nonce unused now can never be used.
 */
export const RECONCILE_AFTER_MS = 60 * 60_000;

/** The longest validity a payment authorization may ask for (x402's default is 300 s). */
export const MAX_AUTHORIZATION_SECONDS = 30 * 60;

export interface ReconcileReport {
  settled: number;
  failed: number;
  /** Rows it could not decide (no chain to ask): left reserved, still counted against the budget. */
  undecided: number;
}

/**
 * Settles or fails the payments left `reserved` (a run that ended abnormally, e.g. terminated by an operator):
 * never signed → failed, nothing can have been paid; signed → the chain says whether the authorization moved tokens
 * (settled, with its transaction) or not (failed: it has expired unused). Idempotent; safe beside running pay runs,
 * whose rows are younger than {@link RECONCILE_AFTER_MS}.
 */
export async function reconcileReserved(input: {
  ledger: Pick<Ledger, 'reservedOlderThan' | 'settleOut' | 'failOut'>;
  /** The paying wallet (the authorizer of every `out` row). */
  payer?: string;
  rpcUrl?: string;
  olderThanMs?: number;
  now?: Date;
}): Promise<ReconcileReport> {
  const report: ReconcileReport = { settled: 0, failed: 0, undecided: 0 };
  for (const row of await input.ledger.reservedOlderThan(input.olderThanMs ?? RECONCILE_AFTER_MS, input.now)) {
    const workflowId = row.workflowId as string;
    if (!row.paymentNonce) {
      await input.ledger.failOut(workflowId, 'reconciled: the pay run ended before it signed; nothing was paid');
      report.failed++;
      continue;
    }
    if (!input.rpcUrl || !input.payer) {
      report.undecided++;
      continue;
    }
    const onChain = await authorizationOnChain(input.rpcUrl, row.asset, input.payer, row.paymentNonce as Hex);
    if (onChain.used) {
      await input.ledger.settleOut(workflowId, { txHash: onChain.txHash ?? '', payer: input.payer });
      report.settled++;
    } else {
      await input.ledger.failOut(workflowId, 'reconciled: the signed authorization was never used on the chain and has expired');
      report.failed++;
    }
  }
  return report;
}
