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
} as const;

export type FailureTypeName = (typeof FailureType)[keyof typeof FailureType];

/** Every failure type, e.g. for activity options' `nonRetryableErrorTypes`. */
export const FAILURE_TYPES: readonly FailureTypeName[] = Object.values(FailureType);
