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
