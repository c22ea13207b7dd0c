import type { LedgerTransaction } from './ledger-rows';

/** Thrown when the local x402 network cannot start: no anvil binary for this platform, or anvil exits or stays silent. */
export class LocalNetworkError extends Error {
  override readonly name = 'LocalNetworkError';
  constructor(
    message: string,
    /** The last lines anvil printed, for the operator. */
    readonly outputTail = '',
    options?: { cause?: unknown },
  ) {
    super(outputTail ? `${message}\n${outputTail}` : message, options);
  }
}

/** Thrown when a ledger call's input is malformed (an empty name, a negative or non-integer amount). */
export class LedgerInputError extends Error {
  override readonly name = 'LedgerInputError';
}

/** Thrown when no `out` row has the workflow ID a call names. */
export class LedgerRowNotFoundError extends Error {
  override readonly name = 'LedgerRowNotFoundError';
  constructor(readonly workflowId: string) {
    super(`The x402 ledger has no payment of workflow ${workflowId}: reserveOut must come first.`);
  }
}

/** Thrown when a call contradicts what the ledger holds (another payment under a workflow ID, a nonce twice). */
export class LedgerConflictError extends Error {
  override readonly name = 'LedgerConflictError';
  constructor(
    message: string,
    /** The row that is there, when there is one. */
    readonly row?: LedgerTransaction,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/** Thrown when the ledger's tables do not exist yet: run the ledger migration (LEDGER_MIGRATION_NAME) first. */
export class LedgerNotReadyError extends Error {
  override readonly name = 'LedgerNotReadyError';
}

/** Thrown when the resource cannot be reached or answers something x402 cannot read (retryable: the network). */
export class PaymentRequestError extends Error {
  override readonly name = 'PaymentRequestError';
}

/** Thrown when the facilitator's discovery endpoint cannot be reached or answers with an error. */
export class DiscoveryError extends Error {
  override readonly name = 'DiscoveryError';
}

/** Thrown when the seller cannot start: the facilitator is unreachable or does not settle `exact` on the network. */
export class SellerStartError extends Error {
  override readonly name = 'SellerStartError';
}
