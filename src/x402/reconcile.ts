import type { Ledger, LedgerTransaction } from './ledger';
import { authorizationOnChain } from './payer';
import type { Hex } from './viem';

/**
 * How old a `reserved` row must be before reconciliation decides it. A pay run records its outcome within minutes;
 * and a signed authorization is valid for at most MAX_AUTHORIZATION_SECONDS (the spend policy refuses longer ones),
 * so past this age the chain's answer is final: a nonce unused now can never be used.
 */
export const RECONCILE_AFTER_MS = 60 * 60_000;

export interface ReconcileReport {
  settled: number;
  failed: number;
  /** Rows it could not decide (no chain to ask): left reserved (an `out` one still counted against the budget). */
  undecided: number;
}

/**
 * Settles or fails the payments left `reserved` by a crash, from the chain, in both directions. Out (a pay run that
 * ended abnormally, e.g. terminated by an operator): never signed → failed, nothing can have been paid; signed → the
 * chain says whether our authorization moved tokens (settled, with its transaction) or not (failed: it has expired
 * unused). In (the seller died while settling a sale): the buyer's authorization, by its payer and nonce, the same way;
 * the seller accepts no authorization valid longer than MAX_AUTHORIZATION_SECONDS (contract/pay-runs.ts), so an unused one is dead.
 * Idempotent; safe beside running pay runs and sales, whose rows are younger than {@link RECONCILE_AFTER_MS}.
 */
export async function reconcileReserved(input: {
  ledger: Pick<Ledger, 'reservedOlderThan' | 'settleOut' | 'failOut' | 'recordIn'>;
  /** The paying wallet (the authorizer of every `out` row). */
  payer?: string;
  rpcUrl?: string;
  olderThanMs?: number;
  now?: Date;
}): Promise<ReconcileReport> {
  const report: ReconcileReport = { settled: 0, failed: 0, undecided: 0 };
  for (const row of await input.ledger.reservedOlderThan(input.olderThanMs ?? RECONCILE_AFTER_MS, input.now)) {
    const outcome = row.direction === 'in' ? await reconcileSale(input.ledger, row, input.rpcUrl) : await reconcilePayment(input.ledger, row, input.payer, input.rpcUrl);
    report[outcome]++;
  }
  return report;
}

type ReconcileLedger = Pick<Ledger, 'settleOut' | 'failOut' | 'recordIn'>;
type Outcome = keyof ReconcileReport;

/** An `out` row; undecided when there is no chain (or no wallet) to ask. */
async function reconcilePayment(ledger: ReconcileLedger, row: LedgerTransaction, payer?: string, rpcUrl?: string): Promise<Outcome> {
  const workflowId = row.workflowId as string;
  if (!row.paymentNonce) {
    await ledger.failOut(workflowId, 'reconciled: the pay run ended before it signed; nothing was paid');
    return 'failed';
  }
  if (!rpcUrl || !payer) return 'undecided';
  const onChain = await authorizationOnChain(rpcUrl, row.asset, payer, row.paymentNonce as Hex);
  if (onChain.used) {
    await ledger.settleOut(workflowId, { txHash: onChain.txHash ?? '', payer });
    return 'settled';
  }
  await ledger.failOut(workflowId, 'reconciled: the signed authorization was never used on the chain and has expired');
  return 'failed';
}

/** An `in` row, whose nonce and payer are the buyer's authorization; undecided without a chain to ask. */
async function reconcileSale(ledger: ReconcileLedger, row: LedgerTransaction, rpcUrl?: string): Promise<Outcome> {
  if (!rpcUrl) return 'undecided';
  const nonce = row.paymentNonce as string;
  const onChain = await authorizationOnChain(rpcUrl, row.asset, row.payer ?? row.counterparty, nonce as Hex);
  const sale = { nonce, counterparty: row.counterparty, resource: row.resource, tool: row.tool, amount: row.amount, asset: row.asset, network: row.network };
  if (onChain.used) {
    await ledger.recordIn({ ...sale, status: 'settled', txHash: onChain.txHash });
    return 'settled';
  }
  await ledger.recordIn({ ...sale, status: 'failed', reason: "reconciled: the buyer's authorization was never used on the chain and has expired; nothing was paid" });
  return 'failed';
}
