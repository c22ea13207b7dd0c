/**
 * The largest tool source a deployment takes. Workflow inputs travel through Temporal, whose default payload limit is
 * 2 MiB; 1.5 MiB leaves room for the rest of the input. (The sandbox alone, `forge sandbox`, takes up to 10 MiB.)
 */
export const MAX_DEPLOY_SOURCE_BYTES = 1.5 * 1024 * 1024;

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

/** How many uids sandbox runs pick from: wide, so that workers sharing a host (each avoiding only its own) rarely meet. */
export const RUN_UID_RANGE = 2 ** 24;
/** The highest FORGE_SANDBOX_UID_BASE: its range must stay below 2^32 - 1 (the kernel's "no uid"). */
export const MAX_UID_BASE = 0xffff_ffff - RUN_UID_RANGE - 1;

/**
 * How sandbox processes are contained, strongest first (FORGE_SANDBOX_CONTAINMENT forces one; by default the sandbox
 * takes the strongest this machine allows): their own PID namespace (as root), their own user and PID namespace
 * (unprivileged), or only their own process group.
 */
export const SANDBOX_CONTAINMENT_MODES = ['pid-namespace', 'user-pid-namespace', 'process-group'] as const;
export type ContainmentMode = (typeof SANDBOX_CONTAINMENT_MODES)[number];

/**
 * SCHEMA_POLICY.md "Round three", counts: the most agent columns one core table may carry, counted with the ones it
 * has already. Every column the agent adds runs its DEFAULT on the application's inserts, and a table's 1,600-column
 * limit counts dropped columns too: columns added without bound would one day refuse the application's own ADD COLUMN.
 */
export const MAX_AGENT_COLUMNS_PER_CORE_TABLE = 32;

/** SCHEMA_POLICY.md "Round three", counts: the most agent indexes on one core table (each one slows every write). */
export const MAX_AGENT_INDEXES_PER_CORE_TABLE = 8;

/** The most files one promotion may change, and the most bytes of new content in all (it travels in the input). */
export const MAX_PROMOTION_FILES = 200;
export const MAX_PROMOTION_BYTES = 1024 * 1024;
