import {
  applyAgentMigration,
  getAgentMigration,
  listAgentMigrations,
  MigrationStatementError,
  readCoreTableUsage,
  type AgentMigration,
  type ForgeDatabase,
  type MigrationLimits,
} from '../db';
import { checkMigration, migrationChecksum, type PolicyReport, type StatementVerdict } from '../policy';
import { MAX_MIGRATION_SQL_BYTES } from '../contract/limits';
import { MIGRATION_NAME_PATTERN, type ListMigrationsResult, type MigrateSchemaWorkflowInput } from '../contract/migration-runs';
import { migrationFailed, migrationRejected } from './failures';

/** What the migration activities need; the worker passes the open database and the configured limits. */
export interface MigrationActivityDeps {
  database: ForgeDatabase;
  /** The one schema a migration may name (FORGE_SCHEMA); Forge's tables and the agent's live there. */
  schema: string;
  limits: MigrationLimits;
}

export interface ValidateMigrationResult {
  /** `ready`: accepted and not applied yet; `alreadyApplied`: this name and checksum are committed already. */
  status: 'ready' | 'alreadyApplied';
  statements: StatementVerdict[];
  /** This worker's limits, recorded in the history so the apply step's timeout replays alike. */
  limits: MigrationLimits;
  appliedAt?: string;
  appliedBy?: { workflowId: string | null; runId: string | null };
}

/** The validate step's input: the workflow's, and the run asking (a run finds its own commit as not yet reported). */
export type ValidateMigrationInput = MigrateSchemaWorkflowInput & { runId?: string };

export interface ApplyMigrationInput {
  name: string;
  sql: string;
  checksum: string;
  workflowId: string;
  runId: string;
}

export interface ApplyMigrationResult {
  /** `alreadyApplied` when another run committed the same name and checksum in the meantime. */
  status: 'applied' | 'alreadyApplied';
  appliedAt: string;
  appliedBy: { workflowId: string | null; runId: string | null };
  /** True when an earlier attempt of this run had committed it already (nothing ran again). */
  byEarlierAttempt?: boolean;
  statementCount: number;
  durationMs?: number;
}

/**
 * The activities of schema migration: thin adapters over the policy (src/policy) and the one-transaction apply
 * (src/db/agent-migrations.ts). Verdicts are non-retryable `MigrationRejected` / `MigrationFailed` failures; a
 * database that cannot be reached is an ordinary error, which Temporal retries until it is back.
 */
export function createMigrationActivities(deps: MigrationActivityDeps) {
  const { database } = deps;

  /**
   * The policy's report, or a MigrationRejected failure. The SQL is judged before any connection is taken; only a
   * migration the policy accepts is judged once more with what the core tables carry of the agent's already (a
   * read of the catalog), so that the caps of SCHEMA_POLICY.md "Round three" count the columns and indexes of earlier
   * migrations too.
   */
  async function judge(input: { name: string; sql: string; checksum: string }): Promise<PolicyReport> {
    const invalid = (message: string) => migrationRejected({ reason: 'invalid', message });
    if (!MIGRATION_NAME_PATTERN.test(input.name)) {
      throw invalid(`the migration name ${JSON.stringify(input.name)} is not allowed: use 1-128 characters of A-Z, a-z, 0-9, _, . and -, starting with a letter or digit`);
    }
    const bytes = Buffer.byteLength(input.sql, 'utf8');
    if (bytes > MAX_MIGRATION_SQL_BYTES) throw invalid(`the migration is ${bytes} bytes, over the ${MAX_MIGRATION_SQL_BYTES}-byte limit`);
    if (migrationChecksum(input.sql) !== input.checksum) {
      throw invalid('the checksum does not match the SQL; resubmit through the Forge client');
    }
    let report = await checkMigration(input.sql, { schema: deps.schema });
    if (report.accepted) {
      report = await checkMigration(input.sql, { schema: deps.schema, coreTables: await readCoreTableUsage(database, deps.schema) });
    }
    if (!report.accepted) {
      const refused = report.statements.filter((s) => !s.accepted);
      const first = refused[0];
      const message = report.problem
        ? `the schema policy refused the migration as a whole (rule ${report.problem.rule}); nothing ran. ${report.problem.message}`
        : report.statements.length === 0
          ? 'the migration holds no statement'
          : `${refused.length} of ${report.statements.length} statement(s) refused by the schema policy; nothing ran. ` +
            `Statement ${first.index} (${first.kind}, rule ${first.rule}): ${first.message}`;
      throw migrationRejected({ reason: 'policy', message, statements: report.statements, problem: report.problem });
    }
    return report;
  }

  const mismatch = (name: string, row: AgentMigration, checksum: string) =>
    migrationRejected({
      reason: 'checksum-mismatch',
      message:
        `a migration named "${name}" was applied at ${row.appliedAt.toISOString()} with different SQL (checksum ` +
        `${row.checksum.slice(0, 12)}…, this one ${checksum.slice(0, 12)}…); applied migrations never change: ` +
        'submit the change as a new migration under a new name',
      existingChecksum: row.checksum,
    });

  return {
    /**
     * Judges the SQL with the schema policy (no database involved), then looks for a row of this name: the same
     * checksum is `alreadyApplied`, another one is rejected. A row committed by this very run (`runId`) is `ready`:
     * the run's apply step was lost after its commit (a worker killed before Temporal recorded the step), and apply
     * will find its own row and report `applied` once. Read-only, so idempotent; nothing to compensate.
     */
    async validateMigration(input: ValidateMigrationInput): Promise<ValidateMigrationResult> {
      const report = await judge(input);
      const row = await getAgentMigration(database, input.name);
      if (row && row.checksum !== input.checksum) throw mismatch(input.name, row, input.checksum);
      if (row && (input.runId === undefined || row.runId !== input.runId)) {
        return {
          status: 'alreadyApplied',
          statements: report.statements,
          limits: deps.limits,
          appliedAt: row.appliedAt.toISOString(),
          appliedBy: { workflowId: row.workflowId, runId: row.runId },
        };
      }
      return { status: 'ready', statements: report.statements, limits: deps.limits };
    },

    /**
     * Judges the SQL again (the policy decides what runs, at the moment it runs), then applies it, its
     * `forge_migrations` row and its `migration.applied` event in ONE transaction with `SET LOCAL lock_timeout` and `statement_timeout`. Idempotent on
     * (name, checksum): a retry after a commit whose completion was lost finds this run's row and reports `applied`
     * without running anything again. Nothing to compensate: a failure rolls the whole transaction back.
     */
    async applyMigration(input: ApplyMigrationInput): Promise<ApplyMigrationResult> {
      const report = await judge(input);
      const statements = report.statements.map((s) => ({ text: s.text, offset: s.location?.offset ?? input.sql.indexOf(s.text) }));
      let result;
      try {
        result = await applyAgentMigration(
          database,
          { name: input.name, checksum: input.checksum, sql: input.sql, statements, workflowId: input.workflowId, runId: input.runId },
          deps.limits,
        );
      } catch (err) {
        if (!(err instanceof MigrationStatementError)) throw err; // connection trouble: retried
        const d = err.details;
        const at = d.statementIndex !== undefined ? ` in statement ${d.statementIndex}${d.line !== undefined ? ` (line ${d.line}, column ${d.column})` : ''}` : '';
        throw migrationFailed({
          // enforcedBy 'forge': Forge cut the statement off at the bound (PGlite cannot time itself out).
          message: `${d.enforcedBy === 'forge' ? 'Forge cancelled the migration' : 'PostgreSQL refused the migration'}${at}: ${err.message} [${d.code}]; it was rolled back, nothing of it remains`,
          error: { ...d, message: err.message },
        });
      }
      if (result.outcome === 'checksumMismatch') throw mismatch(input.name, result.row, input.checksum);
      const { row } = result;
      return {
        status: result.outcome,
        appliedAt: row.appliedAt.toISOString(),
        appliedBy: { workflowId: row.workflowId, runId: row.runId },
        byEarlierAttempt: result.outcome === 'applied' ? result.byEarlierAttempt : undefined,
        statementCount: statements.length,
        durationMs: result.outcome === 'applied' ? result.durationMs : undefined,
      };
    },

    /** Every applied migration, oldest first. Read-only. */
    async listMigrations(): Promise<ListMigrationsResult> {
      const rows = await listAgentMigrations(database);
      return {
        migrations: rows.map((r) => ({
          name: r.name,
          checksum: r.checksum,
          appliedAt: r.appliedAt.toISOString(),
          workflowId: r.workflowId,
          runId: r.runId,
        })),
      };
    },
  };
}

export type MigrationActivities = ReturnType<typeof createMigrationActivities>;
