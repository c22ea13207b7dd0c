/** SCHEMA_POLICY.md "Limits": the most statements one migration may hold. */
export const MAX_MIGRATION_STATEMENTS = 1_000;

/** SCHEMA_POLICY.md "Limits": the most SQL the policy judges as one migration, in bytes of UTF-8. */
export const MAX_MIGRATION_BYTES = 1024 * 1024;

/**
 * The largest migration the migration workflow takes, below the policy's limit: the SQL travels through Temporal
 * (2 MiB payload limit) in the input, again in each activity's input, and once more, JSON-escaped, in the policy's
 * verdicts; a migration of quotes and backslashes doubles in size on the way. `forge lint-sql` judges up to
 * {@link MAX_MIGRATION_BYTES}.
 */
export const MAX_MIGRATION_SQL_BYTES = 512 * 1024;
