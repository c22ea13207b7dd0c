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

/** Where and why a migration's SQL failed, as an agent can act on it (carried into the workflow's result). */
export interface MigrationStatementDetails {
  /** SQLSTATE, e.g. `42704` (undefined object), `55P03` (lock timeout), `57014` (statement timeout), `42601` (syntax). */
  code: string;
  /** 1-based character position in the whole migration text, when PostgreSQL gave one. */
  position?: number;
  /** Line and column (1-based) of `position`, or of the failing statement's start. */
  line?: number;
  column?: number;
  /** 0-based index of the statement that failed. */
  statementIndex?: number;
  detail?: string;
  hint?: string;
  /**
   * Who ended the statement: PostgreSQL itself, or Forge measuring it after it returned (PGlite ignores
   * `statement_timeout` and cannot be interrupted; the transaction is still rolled back).
   */
  enforcedBy: 'postgres' | 'forge';
}

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
