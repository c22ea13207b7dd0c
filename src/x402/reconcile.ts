import { MAX_AUTHORIZATION_SECONDS } from '../contract/pay-runs';
import { readAuthorization } from './chain-truth';
import type { Ledger, LedgerTransaction } from './ledger';
import type { Hex } from './viem';

/**
 * How old a `reserved` row with a signed authorization must be before reconciliation asks the chain about it: a pay
 * run or a sale in progress decides its own row within seconds; past this the chain's answer is taken at once.
 */
export const RECONCILE_AFTER_MS = 30_000;

/** How old an `out` row that was never signed must be before it is failed (its run, if alive, is refused signing then). */
export const UNSIGNED_AFTER_MS = 10 * 60_000;

/** How long a sale may take to settle (the facilitator's own bounded wait): an unused `in` row younger is left open. */
export const SALE_SETTLES_WITHIN_MS = 2 * 60_000;

/**
 * How long after its row was last written a signed authorization may still be used: it was signed after that write,
 * valid for at most MAX_AUTHORIZATION_SECONDS (the spend policy and the seller refuse longer), plus clock skew.
 */
const USABLE_FOR_MS = (MAX_AUTHORIZATION_SECONDS + 120) * 1000;

export interface ReconcileReport {
  settled: number;
  failed: number;
  /** Rows whose authorization the chain shows unused and still usable: left reserved, asked again next time. */
  open: number;
  /** Rows it could not decide (no chain to ask): left reserved (an `out` one still counted against the budget). */
  undecided: number;
}

/**
 * Decides `reserved` payments from the chain, in both directions, as soon as the chain can say: used by a transfer →
 * settled with its transaction; cancelled, or unused past the longest validity it can have → failed; unused and
 * still usable → left reserved (an `out` one still counts against the budget). Out rows never signed are failed after
 * {@link UNSIGNED_AFTER_MS} (nothing can have been paid). In rows (the seller died while settling a sale) are failed
 * once unused for {@link SALE_SETTLES_WITHIN_MS}: the seller settles only rows still reserved, so a failed one is closed.
 * Idempotent; safe beside running pay runs and sales, which decide their own rows the same way.
 */
export async function reconcileReserved(input: {
  ledger: Pick<Ledger, 'reservedOlderThan' | 'settleOut' | 'failOut' | 'recordIn'>;
  /** The paying wallet (the authorizer of every `out` row). */
  payer?: string;
  rpcUrl?: string;
  olderThanMs?: number;
  now?: Date;
}): Promise<ReconcileReport> {
  const report: ReconcileReport = { settled: 0, failed: 0, open: 0, undecided: 0 };
  const now = input.now ?? new Date();
  for (const row of await input.ledger.reservedOlderThan(input.olderThanMs ?? RECONCILE_AFTER_MS, input.now)) {
    const outcome =
      row.direction === 'in'
        ? await reconcileSale(input.ledger, row, now, input.rpcUrl)
        : await reconcilePayment(input.ledger, row, now, input.payer, input.rpcUrl);
    report[outcome]++;
  }
  return report;
}

type ReconcileLedger = Pick<Ledger, 'settleOut' | 'failOut' | 'recordIn'>;
type Outcome = keyof ReconcileReport;

/** The chain's word on an authorization, with no expiry of its own (the caller knows when it can no longer be used). */
async function fateOf(rpcUrl: string, row: LedgerTransaction, payer: string) {
  return readAuthorization(rpcUrl, {
    asset: row.asset,
    payer,
    payTo: row.counterparty,
    amount: row.amount,
    nonce: row.paymentNonce as Hex,
    validBefore: Number.MAX_SAFE_INTEGER,
  });
}

/** An `out` row; undecided when there is no chain (or no wallet) to ask. */
async function reconcilePayment(ledger: ReconcileLedger, row: LedgerTransaction, now: Date, payer?: string, rpcUrl?: string): Promise<Outcome> {
  const workflowId = row.workflowId as string;
  if (!row.paymentNonce) {
    if (now.getTime() - Date.parse(row.createdAt) < UNSIGNED_AFTER_MS) return 'open';
    await ledger.failOut(workflowId, 'reconciled: the pay run ended before it signed; nothing was paid');
    return 'failed';
  }
  if (!rpcUrl || !payer) return 'undecided';
  const fate = await fateOf(rpcUrl, row, payer);
  if (fate.state === 'settled') {
    await ledger.settleOut(workflowId, { txHash: fate.txHash, payer });
    return 'settled';
  }
  if (fate.state === 'cancelled') {
    await ledger.failOut(workflowId, 'reconciled: the authorization was cancelled on the chain; nothing was paid');
    return 'failed';
  }
  if (now.getTime() - Date.parse(row.updatedAt) < USABLE_FOR_MS) return 'open';
  await ledger.failOut(workflowId, 'reconciled: the signed authorization was never used on the chain and has expired');
  return 'failed';
}

/** An `in` row, whose nonce and payer are the buyer's authorization; undecided without a chain to ask. */
async function reconcileSale(ledger: ReconcileLedger, row: LedgerTransaction, now: Date, rpcUrl?: string): Promise<Outcome> {
  if (!rpcUrl) return 'undecided';
  const fate = await fateOf(rpcUrl, row, row.payer ?? row.counterparty);
  const sale = {
    nonce: row.paymentNonce as string,
    counterparty: row.counterparty,
    resource: row.resource,
    tool: row.tool,
    amount: row.amount,
    asset: row.asset,
    network: row.network,
  };
  if (fate.state === 'settled') {
    await ledger.recordIn({ ...sale, status: 'settled', txHash: fate.txHash });
    return 'settled';
  }
  if (fate.state === 'open' && now.getTime() - Date.parse(row.createdAt) < SALE_SETTLES_WITHIN_MS) return 'open';
  await ledger.recordIn({
    ...sale,
    status: 'failed',
    reason: "reconciled: the buyer's authorization was never used on the chain; the sale is closed, nothing was paid",
  });
  return 'failed';
}
