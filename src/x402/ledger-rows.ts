/* The rows of the x402 ledger (src/x402/ledger.ts), apart so that its errors (src/x402/errors.ts) can name them. */

/** Direction of a payment: `out` this agent paid, `in` it was paid. */
export type LedgerDirection = 'in' | 'out';
/**
 * `reserved`, then `settled` or `failed`, which are final. Out: the budget is held, the payment not settled yet. In: the
 * seller is settling the buyer's payment (the row is written before the facilitator is asked).
 */
export type LedgerStatus = 'reserved' | 'settled' | 'failed';

/** One row of `agent_x402_transactions`. Amounts are decimal strings of base units; times ISO 8601 (UTC). */
export interface LedgerTransaction {
  id: string;
  direction: LedgerDirection;
  /** The payee of an `out` payment, the payer of an `in` one. */
  counterparty: string;
  /** The URL paid for (out) or sold (in). */
  resource: string;
  /** The tool sold (`in`); null for payments out. */
  tool: string | null;
  amount: string;
  asset: string;
  network: string;
  /** The EIP-3009 nonce of the signed authorization; null on an `out` row until it is signed. */
  paymentNonce: string | null;
  status: LedgerStatus;
  /** The PayWorkflow run of an `out` row (one row per run); null for `in`. */
  workflowId: string | null;
  txHash: string | null;
  /** The address that signed, as the facilitator reported it (our wallet for `out`, the buyer for `in`). */
  payer: string | null;
  /** Why it failed. */
  reason: string | null;
  createdAt: string;
  updatedAt: string;
  settledAt: string | null;
}
