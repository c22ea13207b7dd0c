import { isCancellation, sleep, upsertSearchAttributes, workflowInfo } from '@temporalio/workflow';
import { applyMigrationStep, migrationSteps, onlineIndexSteps } from './activity-options';
import { migrationVerdictOf } from './failures';
import { MIGRATE_STAGES, type MigrateSchemaResult, type MigrateSchemaWorkflowInput, type MigrateStage, type OnlineIndexStep } from '../contract/migration-runs';
import { oneLine } from '../contract/one-line';
import { Progress } from './progress';
import { refused } from './refusal';
import { runToTheEnd } from './run-to-the-end';
import { ForgeOutcomeKey } from '../contract/search-attributes';

/**
 * Applies one agent schema migration: validate (the schema policy on the PostgreSQL parse tree, before any
 * connection is taken, then the `forge_migrations` row of this name) → apply (ONE transaction: lock and statement
 * timeouts, the statements, the tracking row, the `migration.applied` event) → build (PostgreSQL: each index on a core
 * table, left out of the transaction, built CONCURRENTLY as its own heartbeating step, then the row marked applied
 * with its event; skipped when there are none) → record (reports the committed row).
 *
 * Ends `applied`, `alreadyApplied` (same name and checksum committed before: nothing changed), `rejected` (policy,
 * or the name taken by other SQL: nothing ran) or `failed` (PostgreSQL refused it while it ran, with its code and
 * position: rolled back, nothing remains; or an online index build failed: the transaction's part stays committed,
 * the row `building`, and running the migration again resumes the builds). A rejected or failed migration ends the run
 * as a FAILED execution whose details carry that result (refusal.ts). A database that is down makes the run wait and
 * then finish. A lock not granted under the short core lock timeout (55P03) is waited out with backoff within the
 * lock-wait budget, the stage naming who holds it. The only compensation is the online build's own: an INVALID index a failed build leaves is dropped before it reports. The
 * workflow ID is `schema-migrate/<name>`.
 *
 * Not cancellable, for the reason {@link runToTheEnd} gives: a cancel request is recorded and the run goes on to its
 * end, whose result says what it did (an online build, which never blocks the application, runs to its end too).
 */
export function migrateSchemaWorkflow(input: MigrateSchemaWorkflowInput): Promise<MigrateSchemaResult> {
  return runToTheEnd(() => migrate(input));
}

async function migrate(input: MigrateSchemaWorkflowInput): Promise<MigrateSchemaResult> {
  const { workflowId, runId } = workflowInfo();
  const progress = new Progress('migrate', input.name, MIGRATE_STAGES);
  const finish = (result: Omit<MigrateSchemaResult, 'name' | 'checksum' | 'workflowId' | 'steps' | 'stages'>): MigrateSchemaResult => {
    progress.end(result.status, { message: result.message });
    upsertSearchAttributes([{ key: ForgeOutcomeKey, value: result.status }]);
    const steps = progress.records();
    return { name: input.name, checksum: input.checksum, workflowId, ...result, steps, stages: steps };
  };
  let stage: MigrateStage = 'validate';
  const online: OnlineIndexStep[] = [];
  const withOnline = <T extends object>(result: T): T & { online?: OnlineIndexStep[] } => (online.length > 0 ? { ...result, online } : result);

  try {
    progress.start('validate');
    const validated = await migrationSteps.validateMigration.executeWithOptions({ summary: `validate migration ${input.name}` }, [{ ...input, runId }]);
    const count = validated.statements.length;
    if (validated.status === 'alreadyApplied') {
      progress.done('validate', `already applied at ${validated.appliedAt}`);
      return finish(alreadyApplied(input.name, validated));
    }
    progress.done('validate', `${count} statement(s) accepted by the schema policy`);

    stage = 'apply';
    const applySummary = `one transaction, lock_timeout ${validated.limits.lockTimeoutMs} ms, statement_timeout ${validated.limits.statementTimeoutMs} ms`;
    progress.start('apply', applySummary);
    // A lock not granted (55P03, under the short core lock timeout) is waited out by the run, with backoff, rather
    // than failing it: the busy application delays the migration, not the other way round.
    const lockWaits = new LockWaits(progress, validated.limits.lockWaitMs);
    const applyOnce = () =>
      applyMigrationStep(validated.limits, count).applyMigration.executeWithOptions(
        { summary: `apply ${count} statement(s) of ${input.name} in one transaction` },
        [{ name: input.name, sql: input.sql, checksum: input.checksum, workflowId, runId }],
      );
    const applied = await lockWaits.retry('apply', applySummary, applyOnce);
    if (applied.status === 'alreadyApplied') {
      // Another run committed the same SQL between validate and apply.
      progress.done('apply', `applied by ${applied.appliedBy.workflowId ?? 'another run'} meanwhile`);
      return finish(alreadyApplied(input.name, { ...applied, statements: validated.statements }));
    }
    const pending = applied.online ?? [];
    progress.done(
      'apply',
      applied.byEarlierAttempt
        ? 'committed by an earlier attempt or run'
        : `${count - pending.length} statement(s) committed in ${applied.durationMs} ms${pending.length > 0 ? `; ${pending.length} core index(es) to build online` : ''}`,
    );

    // Indexes on core tables, CONCURRENTLY, each its own durable step.
    if (pending.length > 0) {
      stage = 'build';
      for (const step of pending) {
        const what = `index ${step.index} on ${step.table} CONCURRENTLY (statement ${step.statementIndex})`;
        progress.start('build', what);
        online.push(
          await lockWaits.retry('build', what, () =>
            onlineIndexSteps(validated.limits).buildCoreIndex.executeWithOptions({ summary: `build ${what}` }, [
              { name: input.name, checksum: input.checksum, statementIndex: step.statementIndex },
            ]),
          ),
        );
      }
      progress.done('build', online.map((o) => `${o.index} ${o.outcome} in ${o.durationMs} ms`).join('; '));
      await migrationSteps.completeMigration.executeWithOptions({ summary: `mark ${input.name} applied` }, [
        { name: input.name, checksum: input.checksum, workflowId, runId, statementCount: count },
      ]);
    }

    // The row and the event committed in apply's transaction; this stage reports them (a step of its own would only
    // add scheduling latency to every migration).
    stage = 'record';
    progress.start('record');
    progress.done('record', `forge_migrations row and migration.applied event at ${applied.appliedAt}`);
    return finish(
      withOnline({
        status: 'applied' as const,
        message: `the migration "${input.name}" (${count} statement(s)${online.length > 0 ? `, ${online.length} index(es) built online` : ''}) is applied`,
        appliedAt: applied.appliedAt,
        appliedBy: { workflowId, runId },
        statements: validated.statements,
      }),
    );
  } catch (err) {
    const verdict = migrationVerdictOf(err);
    if (verdict?.kind === 'rejected') {
      // The stage line says what refused it; the result's message and statements say the rest (once, not thrice).
      progress.failed(stage, oneLine(verdict.rejection.message.split('; nothing ran.')[0], 160));
      const { reason, message, statements, problem, existingChecksum } = verdict.rejection;
      return refused(finish({ status: 'rejected', reason, message, statements, problem, existingChecksum }), message);
    }
    if (verdict?.kind === 'failed') {
      progress.failed(stage, `${verdict.failure.error.code}: ${verdict.failure.error.message}`);
      return refused(
        finish(withOnline({ status: 'failed' as const, message: verdict.failure.message, error: verdict.failure.error })),
        verdict.failure.message,
      );
    }
    progress.failed(stage);
    if (!isCancellation(err)) upsertSearchAttributes([{ key: ForgeOutcomeKey, value: 'failed' }]);
    throw err;
  }
}

/**
 * Waits out locks not granted (a MigrationFailed with 55P03) with backoff, within the migration's lock-wait budget,
 * showing in the run's stage who held the lock. Any other outcome, and the last 55P03 past the budget, go through.
 */
class LockWaits {
  private waitedMs = 0;
  private tries = 0;
  constructor(
    private readonly progress: Progress,
    private readonly budgetMs: number | undefined,
  ) {}

  async retry<T>(stage: MigrateStage, summary: string, attempt: () => Promise<T>): Promise<T> {
    for (;;) {
      try {
        return await attempt();
      } catch (err) {
        const verdict = migrationVerdictOf(err);
        if (verdict?.kind !== 'failed' || verdict.failure.error.code !== '55P03' || this.budgetMs === undefined) throw err;
        const backoffMs = Math.min(30_000, 1_000 * 2 ** Math.min(this.tries, 5));
        if (this.waitedMs + backoffMs > this.budgetMs) throw err;
        this.tries++;
        this.waitedMs += backoffMs;
        const holder = verdict.failure.error.blockedBy?.[0];
        const by = holder
          ? `${holder.table} locked by pid ${holder.pid} (${holder.mode}${holder.query ? `: ${oneLine(holder.query, 60)}` : ''})`
          : 'lock not granted';
        this.progress.start(stage, `${summary}; waiting: ${by}; try ${this.tries + 1} in ${backoffMs / 1000} s`);
        await sleep(backoffMs);
        this.progress.start(stage, summary);
      }
    }
  }
}

/**
 * The result when this name with this checksum is already in forge_migrations: found by validate, or committed by
 * another run between validate and apply.
 */
function alreadyApplied(
  name: string,
  row: Pick<MigrateSchemaResult, 'appliedAt' | 'appliedBy' | 'statements'>,
): Pick<MigrateSchemaResult, 'status' | 'message' | 'appliedAt' | 'appliedBy' | 'statements'> {
  return {
    status: 'alreadyApplied',
    message: `the migration "${name}" with this checksum was applied at ${row.appliedAt}; nothing changed`,
    appliedAt: row.appliedAt,
    appliedBy: row.appliedBy,
    statements: row.statements,
  };
}
