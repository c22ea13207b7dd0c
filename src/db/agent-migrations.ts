import { and, asc, eq, sql } from 'drizzle-orm';
import { enterAgentRole } from './agent-role';
import { MigrationStatementError, StatementBoundError } from './errors';
import { quoteIdent } from './quote-ident';
import { agentMigrations, events } from './schema';
import type { ForgeDatabase } from './types';

/** One row of `forge_migrations`: a migration the workflow committed. */
export type AgentMigration = typeof agentMigrations.$inferSelect;

/** One statement of an accepted migration: its text as the policy split it, and where it starts in the whole. */
interface MigrationStatement {
  text: string;
  /** 0-based UTF-16 offset of `text` in the whole migration. */
  offset: number;
  /** Core tables the statement names (the policy's lock plan): its lock is taken under the short core lock timeout. */
  coreTables?: string[];
  /**
   * An index on a core table that Forge builds CONCURRENTLY after the transaction (PostgreSQL; online-index.ts): the
   * transaction skips it and the row is written `building`. Ignored on PGlite, which builds it in the transaction.
   */
  online?: boolean;
}

export interface ApplyAgentMigrationInput {
  name: string;
  checksum: string;
  /** The whole migration, stored in the row and used to place error positions. */
  sql: string;
  statements: MigrationStatement[];
  workflowId?: string;
  runId?: string;
}

/** SCHEMA_POLICY.md "How it runs": `SET LOCAL lock_timeout` and `statement_timeout`; "Round three": short core locks. */
export interface MigrationLimits {
  lockTimeoutMs: number;
  statementTimeoutMs: number;
  /** `lock_timeout` of a statement that names a core table; `lockTimeoutMs` when unset. */
  coreLockTimeoutMs?: number;
  /** How long the transaction may run other statements once it locked a core table; unbounded when unset. */
  coreLockHoldMs?: number;
  /** How long the migration workflow waits out locks not granted, with backoff; not at all when unset. */
  lockWaitMs?: number;
}

/** The lock timeout of a statement naming a core table: the short one, never longer than the ordinary one. */
export function coreLockTimeoutMs(limits: MigrationLimits): number {
  return Math.min(limits.coreLockTimeoutMs ?? limits.lockTimeoutMs, limits.lockTimeoutMs);
}

/** The row's `state`: committed whole, or committed but for core indexes still being built concurrently. */
type AgentMigrationState = 'applied' | 'building';

/** What {@link applyAgentMigration} found or did. */
export type ApplyAgentMigrationOutcome =
  /** Committed now, or (`byEarlierAttempt`) committed by an earlier attempt of the same run before it could report. */
  | { outcome: 'applied'; row: AgentMigration; byEarlierAttempt: boolean; durationMs: number }
  /** Another run committed the same name and checksum first; nothing ran. */
  | { outcome: 'alreadyApplied'; row: AgentMigration }
  /** The name is taken by a different checksum; nothing ran. */
  | { outcome: 'checksumMismatch'; row: AgentMigration };

// Two-key advisory locks live apart from the one-key lock that serialises Forge's own migrations (migrate.ts).
const AGENT_MIGRATION_LOCK_CLASS = 0x466d6967; // "Fmig"

/**
 * SQLSTATEs that mean the connection or the server went away, not that the SQL is wrong: retried by the caller.
 * 08P01 (protocol violation) is the server refusing what it was sent, so a verdict: retrying sends the same again.
 */
export function isConnectionSqlState(code: string): boolean {
  if (code === '08P01') return false;
  return code.startsWith('08') || ['57P01', '57P02', '57P03', '53300'].includes(code);
}

/** The first error in `err`'s cause chain (drizzle wraps driver errors) that `match` accepts. */
function findCause<T extends Error>(err: unknown, match: (e: Error) => e is T): T | undefined {
  for (let e: unknown = err, depth = 0; e instanceof Error && depth < 5; e = e.cause, depth++) if (match(e)) return e;
  return undefined;
}

/** The PostgreSQL error behind `err`, when there is one with a SQLSTATE. */
export function postgresErrorOf(err: unknown): PostgresErrorFields | undefined {
  const found = findCause(err, (e): e is Error & PostgresErrorFields => {
    const code = (e as Partial<PostgresErrorFields>).code;
    return typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code) && 'severity' in e;
  });
  if (!found) return undefined;
  return { code: found.code, message: found.message, position: found.position, detail: found.detail, hint: found.hint };
}

/** The fields node-postgres' and PGlite's DatabaseError share. */
export interface PostgresErrorFields {
  code: string;
  message: string;
  position?: string;
  detail?: string;
  hint?: string;
}

/**
 * Applies an accepted migration in ONE transaction: under a per-name advisory lock (PostgreSQL; PGlite has one
 * backend, so its transactions never interleave), `SET LOCAL lock_timeout` and `statement_timeout`, a look at the
 * `forge_migrations` row of this name, the statements one by one, the row and a `migration.applied` event. All of it
 * commits, or none of it. The statement timeout is the deadline of all the statements together. On PostgreSQL the
 * statements run under a role that is no superuser and holds no server-file or signal role (agent-role.ts). The
 * transaction runs in a session of its own (`ForgeDatabase.isolatedSession`), so nothing of it outlives it.
 *
 * Idempotent per (name, checksum): when the row is already there nothing runs again. A row written by the same
 * `runId` means an earlier attempt of this run committed and was lost before it could report (a worker killed
 * between COMMIT and completion): that is `applied`, once.
 *
 * The statement bound holds on both backends: PostgreSQL cancels a statement at `statement_timeout` (57014).
 * PGlite ignores that setting, so Forge cancels a statement still running at the bound itself
 * (`ForgeDatabase.boundStatement`: the database's thread is ended and the data directory reopened, which discards the
 * transaction) and reports the same 57014 with `enforcedBy: 'forge'`; on an in-memory PGlite the statement runs to
 * its end first. Measured on PGlite under /dev/shm (2026-11-22): with a 1 s bound, an ALTER TABLE rewrite that runs
 * ~19 s left alone fails 5–30 ms after the bound, and the next call waits ~0.5–0.9 s for the reopen.
 *
 * @throws MigrationStatementError for any SQL error (with SQLSTATE, position, statement index); the transaction is
 *   rolled back. Connection errors are thrown as they are, for the caller to retry.
 */
export async function applyAgentMigration(
  database: ForgeDatabase,
  input: ApplyAgentMigrationInput,
  limits: MigrationLimits,
): Promise<ApplyAgentMigrationOutcome> {
  try {
    return await database.isolatedSession((db) =>
      db.transaction(async (tx) => {
        // Before the timeouts: a second run of this name waits for the first to end rather than failing at lock_timeout.
        if (database.kind === 'postgres') {
          await tx.execute(sql`SELECT pg_advisory_xact_lock(${AGENT_MIGRATION_LOCK_CLASS}, hashtext(${input.name}))`);
        }
        await tx.execute(
          sql`SELECT set_config('lock_timeout', ${`${limits.lockTimeoutMs}ms`}, true), set_config('statement_timeout', ${`${limits.statementTimeoutMs}ms`}, true)`,
        );
        const [existing] = await tx.select().from(agentMigrations).where(eq(agentMigrations.name, input.name)).limit(1);
        if (existing) {
          if (existing.checksum !== input.checksum) return { outcome: 'checksumMismatch', row: existing };
          // A row still `building` is resumed by any run: its transaction committed, its online indexes are not all built.
          if ((input.runId !== undefined && existing.runId === input.runId) || existing.state === 'building') {
            return { outcome: 'applied', row: existing, byEarlierAttempt: true, durationMs: 0 };
          }
          return { outcome: 'alreadyApplied', row: existing };
        }
        const started = performance.now();
        // The statement timeout bounds the whole migration, not each statement alone: what is left of it bounds the next.
        const deadline = started + limits.statementTimeoutMs;
        const postgres = database.kind === 'postgres';
        if (postgres) await enterAgentRole(tx);
        // Once a statement has locked a core table, the rest of the transaction runs against the hold bound too: the
        // application waits on that lock until COMMIT (SCHEMA_POLICY.md "Round three", locks stay short).
        let hold: { deadline: number; since: number; tables: string[] } | undefined;
        let deferred = 0;
        for (const [index, statement] of input.statements.entries()) {
          if (postgres && statement.online) {
            deferred++;
            continue;
          }
          const untilDeadline = Math.floor(deadline - performance.now());
          if (untilDeadline <= 0) throw deadlineError(input, index, limits);
          const untilHold = hold ? Math.floor(hold.deadline - performance.now()) : Infinity;
          if (untilHold <= 0) throw holdError(input, index, limits, hold!);
          const remaining = Math.min(untilDeadline, untilHold);
          const core = (statement.coreTables?.length ?? 0) > 0;
          if (postgres) {
            const lockTimeout = core ? coreLockTimeoutMs(limits) : limits.lockTimeoutMs;
            await tx.execute(sql`SELECT set_config('statement_timeout', ${`${remaining}ms`}, true), set_config('lock_timeout', ${`${lockTimeout}ms`}, true)`);
          }
          try {
            await database.boundStatement(remaining, () => tx.execute(sql.raw(statement.text)));
          } catch (err) {
            if (untilHold < untilDeadline && postgresErrorOf(err)?.code === '57014') throw holdError(input, index, limits, hold!, err);
            throw boundError(err, input, index, limits) ?? statementError(err, input, index) ?? err;
          }
          if (core && !hold && limits.coreLockHoldMs !== undefined) {
            hold = { deadline: performance.now() + limits.coreLockHoldMs, since: index, tables: statement.coreTables! };
          }
        }
        // Whatever the statements set in the session (role, search_path, ...) must not steer Forge's own writes: back
        // to Forge's role (RESET ALL leaves the role alone) and settings. The timeouts come back too (RESET ALL clears
        // them), with what is left of the deadline, at least 1 s for the row.
        await tx.execute(sql.raw('RESET ROLE'));
        await tx.execute(sql.raw('RESET ALL'));
        const left = Math.max(1_000, Math.floor(deadline - performance.now()));
        await tx.execute(
          sql`SELECT set_config('search_path', ${quoteIdent(database.schema)}, true), set_config('lock_timeout', ${`${limits.lockTimeoutMs}ms`}, true), set_config('statement_timeout', ${`${left}ms`}, true)`,
        );
        const state: AgentMigrationState = deferred > 0 ? 'building' : 'applied';
        const [row] = await tx
          .insert(agentMigrations)
          .values({ name: input.name, checksum: input.checksum, sql: input.sql, workflowId: input.workflowId, runId: input.runId, state })
          .returning();
        // The audit record commits with the migration, so the event log never misses or invents one; a migration
        // with online indexes gets it when the last one is built (completeAgentMigration).
        if (state === 'applied') await tx.insert(events).values(appliedEvent(input, input.statements.length));
        const outcome: ApplyAgentMigrationOutcome = {
          outcome: 'applied',
          row,
          byEarlierAttempt: false,
          durationMs: Math.round(performance.now() - started),
        };
        return outcome;
      }),
    );
  } catch (err) {
    if (err instanceof MigrationStatementError) throw err;
    // A SQL error outside the statements (COMMIT's deferred checks, the row's insert) is a verdict too.
    throw statementError(err, input, undefined) ?? err;
  }
}

function appliedEvent(input: { name: string; checksum: string; runId?: string; workflowId?: string }, statements: number) {
  return {
    kind: 'migration.applied',
    subject: input.name,
    detail: { checksum: input.checksum, runId: input.runId ?? '', statements },
    workflowId: input.workflowId,
  };
}

/**
 * Marks a `building` migration applied once its online indexes are built, with its `migration.applied` event, in one
 * transaction. Idempotent: a row already `applied` is returned as it is.
 * @returns the row, or undefined when there is no row of this name and checksum.
 */
export async function completeAgentMigration(
  database: ForgeDatabase,
  input: { name: string; checksum: string; runId?: string; workflowId?: string; statementCount: number },
): Promise<AgentMigration | undefined> {
  return database.db.transaction(async (tx) => {
    const [updated] = await tx
      .update(agentMigrations)
      .set({ state: 'applied' })
      .where(and(eq(agentMigrations.name, input.name), eq(agentMigrations.checksum, input.checksum), eq(agentMigrations.state, 'building')))
      .returning();
    if (updated) {
      await tx.insert(events).values(appliedEvent(input, input.statementCount));
      return updated;
    }
    const [row] = await tx
      .select()
      .from(agentMigrations)
      .where(and(eq(agentMigrations.name, input.name), eq(agentMigrations.checksum, input.checksum)))
      .limit(1);
    return row;
  });
}

/** A statement ran past the time the transaction may hold a core table's lock while other work runs. */
function holdError(
  input: ApplyAgentMigrationInput,
  index: number,
  limits: MigrationLimits,
  hold: { since: number; tables: string[] },
  cause?: unknown,
): MigrationStatementError {
  return new MigrationStatementError(
    `canceling statement due to statement timeout: statement ${index} ran while core table ${hold.tables.join(', ')} ` +
      `was locked by statement ${hold.since}, past the ${limits.coreLockHoldMs} ms a migration may keep a core table ` +
      "locked (the application's queries wait on that lock until the migration commits). Move the slow work to a " +
      'migration of its own, or before the statement that changes the core table; it was rolled back',
    { code: '57014', statementIndex: index, ...locate(input.sql, input.statements[index].offset), enforcedBy: 'forge' },
    cause === undefined ? undefined : { cause },
  );
}

/** The migration ran out of its deadline between two statements. */
function deadlineError(input: ApplyAgentMigrationInput, index: number, limits: MigrationLimits): MigrationStatementError {
  return new MigrationStatementError(
    `canceling statement due to statement timeout: the migration used its whole ${limits.statementTimeoutMs} ms ` +
      `statement_timeout before statement ${index} (the timeout bounds the whole migration); it was rolled back`,
    { code: '57014', statementIndex: index, ...locate(input.sql, input.statements[index].offset), enforcedBy: 'forge' },
  );
}

/** A MigrationStatementError for Forge's own statement bound (PGlite), or undefined when `err` is something else. */
function boundError(err: unknown, input: ApplyAgentMigrationInput, index: number, limits: MigrationLimits): MigrationStatementError | undefined {
  const bound = findCause(err, (e): e is StatementBoundError => e instanceof StatementBoundError);
  if (!bound) return undefined;
  return new MigrationStatementError(
    `canceling statement due to statement timeout: statement ${index} passed the ${limits.statementTimeoutMs} ms ` +
      `statement_timeout of the whole migration (enforced by Forge, as embedded PGlite ignores it): ${bound.message}; ` +
      'the migration was rolled back',
    { code: '57014', statementIndex: index, ...locate(input.sql, input.statements[index].offset), enforcedBy: 'forge' },
    { cause: err },
  );
}

/** A MigrationStatementError for a PostgreSQL error, or undefined for a connection error (or no PostgreSQL error). */
function statementError(err: unknown, input: ApplyAgentMigrationInput, index: number | undefined): MigrationStatementError | undefined {
  const pg = postgresErrorOf(err);
  if (!pg || isConnectionSqlState(pg.code)) return undefined;
  const statement = index === undefined ? undefined : input.statements[index];
  let where: { position?: number; line?: number; column?: number } = statement ? locate(input.sql, statement.offset) : {};
  const inStatement = Number(pg.position);
  if (statement && Number.isInteger(inStatement) && inStatement > 0) {
    // PostgreSQL counts characters (code points) from 1 within the text it was sent: place that in the whole text.
    const unitOffset = statement.offset + [...statement.text].slice(0, inStatement - 1).join('').length;
    where = locate(input.sql, unitOffset);
  }
  return new MigrationStatementError(
    pg.message,
    { code: pg.code, statementIndex: index, ...where, detail: pg.detail, hint: pg.hint, enforcedBy: 'postgres' },
    { cause: err },
  );
}

/** 1-based character position, line and column of a UTF-16 offset in `text`. */
function locate(text: string, offset: number): { position: number; line: number; column: number } {
  const before = [...text.slice(0, offset)];
  const lastNewline = before.lastIndexOf('\n');
  const line = before.filter((c) => c === '\n').length + 1;
  return { position: before.length + 1, line, column: before.length - lastNewline };
}

/** The row of one migration, if it was applied. */
export async function getAgentMigration(database: ForgeDatabase, name: string): Promise<AgentMigration | undefined> {
  const [row] = await database.db.select().from(agentMigrations).where(eq(agentMigrations.name, name)).limit(1);
  return row;
}

/** Every applied migration, oldest first. */
export async function listAgentMigrations(database: ForgeDatabase): Promise<AgentMigration[]> {
  return database.db.select().from(agentMigrations).orderBy(asc(agentMigrations.appliedAt), asc(agentMigrations.name));
}
