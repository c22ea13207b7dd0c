import type { MigrationStatementDetails } from '../contract/migration-runs';

/** Thrown when a tool version that an operation needs does not exist (e.g. activating a version never persisted). */
export class ToolVersionNotFoundError extends Error {
  override readonly name = 'ToolVersionNotFoundError';
  constructor(
    readonly tool: string,
    readonly version: number,
  ) {
    super(`Tool ${tool} has no version ${version}.`);
  }
}

/** Thrown when Forge's own migrations (drizzle/) cannot be found or applied; the database is left as it was. */
export class MigrationError extends Error {
  override readonly name = 'MigrationError';
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
  }
}

/** Thrown when the database cannot be opened (PGlite data directory unusable, PostgreSQL rejecting the login). */
export class DatabaseOpenError extends Error {
  override readonly name = 'DatabaseOpenError';
  constructor(
    message: string,
    readonly kind: 'pglite' | 'postgres',
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

export type { MigrationStatementDetails };

/** Thrown when PostgreSQL (or Forge's own statement bound) ends an agent migration; the transaction was rolled back. */
export class MigrationStatementError extends Error {
  override readonly name = 'MigrationStatementError';
  constructor(
    message: string,
    readonly details: MigrationStatementDetails,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/**
 * Thrown when a statement passed the wall-clock bound Forge enforces on embedded PGlite
 * (`ForgeDatabase.boundStatement`): `cancelled` when it was stopped at the bound, else it ran to its end first (an
 * in-memory database cannot be cancelled without losing it). Either way its transaction does not commit.
 */
export class StatementBoundError extends Error {
  override readonly name = 'StatementBoundError';
  constructor(
    readonly boundMs: number,
    readonly cancelled: boolean,
    /** How long it ran, when it ran to its end. */
    readonly elapsedMs?: number,
  ) {
    super(
      cancelled
        ? `the statement was cancelled at its ${boundMs} ms bound: the embedded database's thread was ended and the ` +
            'database reopened, which discards the open transaction'
        : `the statement ran ${elapsedMs} ms, past its ${boundMs} ms bound; an in-memory embedded database cannot ` +
            'be cancelled without losing its data, so it ran to its end',
    );
  }
}
