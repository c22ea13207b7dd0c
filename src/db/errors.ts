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

/** Thrown when PostgreSQL (or Forge's own statement bound) ends an agent migration; the transaction was rolled back. */
export class MigrationStatementError extends Error {
  override readonly name = 'MigrationStatementError';
  constructor(
    message: string,
    readonly details: {
      /** SQLSTATE. */
      code: string;
      /** 1-based character position in the whole migration text. */
      position?: number;
      line?: number;
      column?: number;
      statementIndex?: number;
      detail?: string;
      hint?: string;
      enforcedBy: 'postgres' | 'forge';
    },
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}
