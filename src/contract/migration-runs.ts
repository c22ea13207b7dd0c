/**
 * Inputs and results of the schema migration workflow: plain JSON, shared by the client, the activities and the
 * workflow.
 */
import type { MigrateSchemaInput } from './inputs';
import type { MigrationProblem, StatementVerdict } from './policy-verdict';
import type { StageRecord } from './run-progress';

/**
 * The steps of a migration: the policy and the tracking row; the one transaction; the indexes on core tables built
 * CONCURRENTLY after it (PostgreSQL; skipped when there are none); the audit record.
 */
export const MIGRATE_STAGES = ['validate', 'apply', 'build', 'record'] as const;
export type MigrateStage = (typeof MIGRATE_STAGES)[number];

export { MIGRATION_NAME_PATTERN } from './migration-name';
/** The input's type is inferred from its schema (src/contract/inputs.ts). */
export type { MigrateSchemaInput } from './inputs';

/** What the client starts the workflow with: the input and the sha256 of the SQL (checked again by the worker). */
export interface MigrateSchemaWorkflowInput extends MigrateSchemaInput {
  checksum: string;
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
  /** For a lock not granted (55P03): the sessions that held a lock on the table meanwhile, oldest transaction first. */
  blockedBy?: LockHolder[];
  /**
   * Who ended the statement: PostgreSQL itself, or Forge (PGlite ignores `statement_timeout`: Forge cancels the
   * statement at the bound by ending the database's thread, or, on an in-memory PGlite, fails it once it returned).
   * The transaction is rolled back either way.
   */
  enforcedBy: 'postgres' | 'forge';
}

/** A session holding a lock on a core table a migration waited for (pg_locks and pg_stat_activity). */
export interface LockHolder {
  pid: number;
  /** The lock mode held, e.g. `RowExclusiveLock`. */
  mode: string;
  table: string;
  /** pg_stat_activity's state (`active`, `idle in transaction`, ...). */
  state?: string;
  /** The first 200 characters of the session's current or last query. */
  query?: string;
  /** How long its transaction has been open. */
  transactionMs?: number;
}

/** An index on a core table that the migration built CONCURRENTLY, outside its transaction (SCHEMA_POLICY.md "Round three"). */
export interface OnlineIndexStep {
  /** 0-based index of the CREATE INDEX statement in the migration. */
  statementIndex: number;
  index: string;
  table: string;
  /** `built` by this run; `present`: built by an earlier attempt or run. */
  outcome: 'built' | 'present';
  durationMs: number;
}

/** A PostgreSQL error raised while the migration ran, as an agent can act on it. */
export interface MigrationSqlError extends Omit<MigrationStatementDetails, 'enforcedBy'> {
  message: string;
  enforcedBy?: MigrationStatementDetails['enforcedBy'];
}

/** Why a migration was refused before anything ran. */
export type MigrationRejectionReason = 'policy' | 'checksum-mismatch' | 'invalid';

/**
 * CLI.md `forge migrate --json`: `{status, name, checksum, workflowId, statements?, error?}` plus what an operator
 * reads next to it.
 */
export interface MigrateSchemaResult {
  status: 'applied' | 'alreadyApplied' | 'rejected' | 'failed';
  name: string;
  /** sha256 (hex) of the SQL submitted. */
  checksum: string;
  workflowId: string;
  /** One sentence: what happened, or why not. */
  message: string;
  /** Set when `rejected`. */
  reason?: MigrationRejectionReason;
  /** The policy's verdict on every statement (always on a policy rejection; on success too). */
  statements?: StatementVerdict[];
  /** Set when the policy refused the migration as a whole (NUL byte, too large, too many statements). */
  problem?: MigrationProblem;
  /** Set when `failed`: PostgreSQL's code, message and position. */
  error?: MigrationSqlError;
  /** When the migration of this name was committed (applied and alreadyApplied). */
  appliedAt?: string;
  /** The run that committed it (for alreadyApplied, an earlier one). */
  appliedBy?: { workflowId: string | null; runId: string | null };
  /** The checksum stored under this name, when it differs from the one submitted. */
  existingChecksum?: string;
  /**
   * The indexes on core tables built CONCURRENTLY after the transaction (PostgreSQL), in statement order; absent when
   * there were none. On a `failed` run, the ones built before the failure: the migration stays `building`, and
   * running it again resumes there.
   */
  online?: OnlineIndexStep[];
  /** The run's steps as its progress showed them (validate, apply, build, record): every run result's `steps`. */
  steps: StageRecord[];
  /** The same records as `steps`, under the name results had before (kept for existing readers; issue 29). */
  stages: StageRecord[];
}

/** One applied migration, as `forge migrations` lists it. */
export interface MigrationSummary {
  name: string;
  checksum: string;
  appliedAt: string;
  workflowId: string | null;
  runId: string | null;
  /** `building` while indexes on core tables are still to be built CONCURRENTLY; run the migration again to finish. */
  state: 'applied' | 'building';
}

export interface ListMigrationsResult {
  migrations: MigrationSummary[];
}

/** Details of a `MigrationRejected` failure. */
export interface MigrationRejection {
  reason: MigrationRejectionReason;
  message: string;
  statements?: StatementVerdict[];
  problem?: MigrationProblem;
  existingChecksum?: string;
}

/** Details of a `MigrationFailed` failure. */
export interface MigrationFailure {
  message: string;
  error: MigrationSqlError;
}
