/** Stable `type`s of the non-retryable failures Forge's activities raise for verdicts. */
export const FailureType = {
  /** The tool was refused: compile error, sandbox verdict other than passed, a reserved or invalid name. */
  toolRejected: 'ToolRejected',
  /** A rollback or delete that names something that is not there. */
  notFound: 'NotFound',
  /** A migration refused before it ran: the schema policy, a checksum that differs from the applied one. */
  migrationRejected: 'MigrationRejected',
  /** A migration PostgreSQL refused while it ran (SQL error, lock or statement timeout); rolled back. */
  migrationFailed: 'MigrationFailed',
  /** A promotion refused or failed verification: an unmapped or unsafe path, a failed stage, a conflict, local changes. */
  promotionRejected: 'PromotionRejected',
  /**
   * How a refused run ends (a rejected deployment, rollback or delete, a refused migration or promotion): a FAILED
   * workflow execution, so the Web UI's list tells it from a run that did what it was asked, whose failure's details
   * hold the run's typed result; ForgeClient returns that result as it returns a completed run's.
   */
  runRefused: 'ForgeRunRefused',
  /** A payment asked of a worker that has no wallet configured (FORGE_X402_WALLET_KEY): nothing can be signed there. */
  noWallet: 'ForgeNoWallet',
  /** A payment's reservation was released (failed or settled) before it was signed: nothing was signed. */
  reservationReleased: 'ForgeReservationReleased',
} as const;

export type FailureTypeName = (typeof FailureType)[keyof typeof FailureType];

/** Every failure type, e.g. for activity options' `nonRetryableErrorTypes`. */
export const FAILURE_TYPES: readonly FailureTypeName[] = Object.values(FailureType);
