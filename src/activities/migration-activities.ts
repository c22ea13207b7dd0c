import { Context } from '@temporalio/activity';
import {
  applyAgentMigration,
  buildIndexOnline,
  completeAgentMigration,
  coreLockTimeoutMs,
  getAgentMigration,
  listAgentMigrations,
  lockHolders,
  MigrationStatementError,
  readCoreTableUsage,
  type AgentMigration,
  type ForgeDatabase,
  type MigrationLimits,
} from '../db';
import { checkMigration, concurrentIndexSql, migrationChecksum, planLocks, type PolicyReport, type StatementVerdict } from '../policy';
import { MAX_MIGRATION_SQL_BYTES } from '../contract/limits';
import {
  MIGRATION_NAME_PATTERN,
  type ListMigrationsResult,
  type MigrateSchemaWorkflowInput,
  type MigrationSqlError,
  type OnlineIndexStep,
} from '../contract/migration-runs';
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
  /**
   * The indexes on core tables the transaction left out, to be built CONCURRENTLY by {@link buildCoreIndex}, in
   * statement order (PostgreSQL; always empty on PGlite). Also set when resuming a migration still `building`.
   */
  online?: Array<{ statementIndex: number; index: string; table: string }>;
}

export interface BuildCoreIndexInput {
  name: string;
  checksum: string;
  statementIndex: number;
}

export interface CompleteMigrationInput {
  name: string;
  checksum: string;
  workflowId: string;
  runId: string;
  statementCount: number;
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
      throw invalid(
        `the migration name ${JSON.stringify(input.name)} is not allowed: use 1-128 characters of A-Z, a-z, 0-9, _, . and -, starting with a letter or digit`,
      );
    }
    const bytes = Buffer.byteLength(input.sql, 'utf8');
    if (bytes > MAX_MIGRATION_SQL_BYTES) throw invalid(`the migration is ${bytes} bytes, over the ${MAX_MIGRATION_SQL_BYTES}-byte limit`);
    if (migrationChecksum(input.sql) !== input.checksum) {
      throw invalid('the checksum does not match the SQL; resubmit through the Forge client');
    }
    let report = await checkMigration(input.sql, { schema: deps.schema });
    // A migration committed already (a retry, a resumed online build) is not counted against the caps a second time:
    // the core tables carry its own columns and indexes now.
    if (report.accepted && (await getAgentMigration(database, input.name))?.checksum !== input.checksum) {
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

  /** For a lock not granted (55P03), who held a lock on the tables meanwhile (best effort: the error stands alone). */
  async function withLockHolders(error: MigrationSqlError, tables: string[]): Promise<MigrationSqlError> {
    if (error.code !== '55P03') return error;
    const blockedBy = await lockHolders(database, tables).catch(() => []);
    return blockedBy.length > 0 ? { ...error, blockedBy } : error;
  }

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
      // A row still `building` is resumed: its online indexes are built by this run (the transaction is not run again).
      if (row && row.state !== 'building' && (input.runId === undefined || row.runId !== input.runId)) {
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
      const plan = planLocks(input.sql);
      const postgres = database.kind === 'postgres';
      const statements = report.statements.map((s, i) => ({
        text: s.text,
        offset: s.location?.offset ?? input.sql.indexOf(s.text),
        coreTables: plan[i]?.coreTables,
        online: postgres && plan[i]?.coreIndex !== undefined,
      }));
      const online = postgres ? plan.flatMap((p, statementIndex) => (p.coreIndex ? [{ statementIndex, ...p.coreIndex }] : [])) : [];
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
        const at =
          d.statementIndex !== undefined ? ` in statement ${d.statementIndex}${d.line !== undefined ? ` (line ${d.line}, column ${d.column})` : ''}` : '';
        const tables = d.statementIndex !== undefined ? (plan[d.statementIndex]?.relations ?? []) : [];
        const error = await withLockHolders({ ...d, message: err.message }, tables);
        throw migrationFailed({
          // enforcedBy 'forge': Forge cut the statement off at the bound (PGlite cannot time itself out).
          message: `${d.enforcedBy === 'forge' ? 'Forge cancelled the migration' : 'PostgreSQL refused the migration'}${at}: ${err.message} [${d.code}]${heldBy(error)}; it was rolled back, nothing of it remains`,
          error,
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
        online: result.outcome === 'applied' && online.length > 0 ? online : undefined,
      };
    },

    /**
     * Builds the core-table index of statement `statementIndex` of a committed migration still `building`,
     * CONCURRENTLY (src/db/online-index.ts), heartbeating its progress. Idempotent by the index's name: a valid index
     * from an earlier attempt is `present`; an INVALID one is dropped and built again. The SQL is the committed row's,
     * judged again. A verdict (lock not granted, the bound, an SQL error) is a MigrationFailed with the INVALID index
     * already dropped, so nothing of the failed build stays on the application's table.
     */
    async buildCoreIndex(input: BuildCoreIndexInput): Promise<OnlineIndexStep> {
      const row = await getAgentMigration(database, input.name);
      if (!row || row.checksum !== input.checksum) {
        throw migrationRejected({ reason: 'invalid', message: `no committed migration "${input.name}" with this checksum to build an index of` });
      }
      const report = await checkMigration(row.sql, { schema: deps.schema });
      const verdict = report.statements[input.statementIndex];
      const step = planLocks(row.sql)[input.statementIndex]?.coreIndex;
      if (!report.accepted || !verdict || !step) {
        throw migrationRejected({ reason: 'policy', message: `statement ${input.statementIndex} of "${input.name}" is no accepted index on a core table` });
      }
      let statement: string;
      try {
        statement = concurrentIndexSql(verdict.text);
      } catch (err) {
        throw migrationRejected({ reason: 'policy', message: `statement ${input.statementIndex} cannot be built CONCURRENTLY: ${(err as Error).message}` });
      }
      const heartbeat = activityHeartbeat();
      heartbeat({ phase: 'starting' });
      try {
        const built = await buildIndexOnline(
          database,
          { ...step, statement },
          { lockTimeoutMs: coreLockTimeoutMs(deps.limits), statementTimeoutMs: deps.limits.statementTimeoutMs },
          heartbeat,
        );
        return { statementIndex: input.statementIndex, ...step, outcome: built.outcome, durationMs: built.durationMs };
      } catch (err) {
        if (!(err instanceof MigrationStatementError)) throw err; // connection trouble: retried
        const error = await withLockHolders({ ...err.details, statementIndex: input.statementIndex, message: err.message }, [step.table]);
        throw migrationFailed({
          message:
            `PostgreSQL could not build index ${step.index} on ${step.table} CONCURRENTLY (statement ${input.statementIndex}): ` +
            `${err.message} [${error.code}]${heldBy(error)}; the rest of the migration is committed and it stays "building": ` +
            'run it again to resume the build',
          error,
        });
      }
    },

    /** Marks a migration whose online indexes are all built applied, with its event (idempotent). */
    async completeMigration(input: CompleteMigrationInput): Promise<{ appliedAt: string }> {
      const row = await completeAgentMigration(database, input);
      if (!row) throw new Error(`no migration "${input.name}" with this checksum to complete`); // retried: cannot happen after apply
      return { appliedAt: row.appliedAt.toISOString() };
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
          state: r.state === 'building' ? 'building' : 'applied',
        })),
      };
    },
  };
}

/** The running activity's heartbeat; a no-op when called outside one (a test calling the activity function itself). */
function activityHeartbeat(): (details: unknown) => void {
  try {
    const ctx = Context.current();
    return (details) => ctx.heartbeat(details);
  } catch {
    return () => undefined;
  }
}

/** ` (held by pid 123 in RowExclusiveLock: UPDATE users …)` for a lock not granted, else nothing. */
function heldBy(error: MigrationSqlError): string {
  const first = error.blockedBy?.[0];
  if (!first) return '';
  return ` (${first.table} held by pid ${first.pid} in ${first.mode}${first.query ? `: ${first.query.slice(0, 80)}` : ''})`;
}

export type MigrationActivities = ReturnType<typeof createMigrationActivities>;
