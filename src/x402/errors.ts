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
