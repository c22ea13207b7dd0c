import { FORGE_TABLES } from '../contract/forge-tables';
import { bigserial, index, integer, jsonb, pgTable, text, timestamp, unique } from 'drizzle-orm/pg-core';

// Tables are unqualified (no pgSchema): FORGE_SCHEMA is applied through search_path, so the same generated
// migrations serve every schema.

/** Every persisted tool version. Rows are immutable once written; (name, content_hash) makes persisting idempotent. */
export const toolVersions = pgTable(
  FORGE_TABLES.toolVersions,
  {
    id: bigserial('id', { mode: 'number' }).primaryKey(),
    name: text('name').notNull(),
    version: integer('version').notNull(),
    contentHash: text('content_hash').notNull(),
    sourceTs: text('source_ts').notNull(),
    compiledJs: text('compiled_js').notNull(),
    testInput: jsonb('test_input').$type<unknown>(),
    description: text('description').notNull().default(''),
    verdict: jsonb('verdict').$type<unknown>().notNull(),
    createdAt: timestamp('created_at', { withTimezone: true, mode: 'date' }).notNull().defaultNow(),
    workflowId: text('workflow_id'),
  },
  (t) => [unique('tool_versions_name_version_key').on(t.name, t.version), unique('tool_versions_name_content_hash_key').on(t.name, t.contentHash)],
);

/**
 * The last version number handed out per tool. Kept apart from tool_versions so numbers never repeat after a
 * tool's versions are deleted, and its row is the per-tool lock that serialises inserts and activations.
 */
export const toolVersionCounters = pgTable(FORGE_TABLES.toolVersionCounters, {
  name: text('name').primaryKey(),
  lastVersion: integer('last_version').notNull().default(0),
});

/** The one active version per tool; no row means the tool is not active. */
export const activeTools = pgTable(FORGE_TABLES.activeTools, {
  name: text('name').primaryKey(),
  version: integer('version').notNull(),
  updatedAt: timestamp('updated_at', { withTimezone: true, mode: 'date' }).notNull().defaultNow(),
});

/** Append-only log of what happened to tools (and later migrations and promotions), for operators and audits. */
export const events = pgTable(
  FORGE_TABLES.events,
  {
    id: bigserial('id', { mode: 'number' }).primaryKey(),
    at: timestamp('at', { withTimezone: true, mode: 'date' }).notNull().defaultNow(),
    kind: text('kind').notNull(),
    subject: text('subject').notNull(),
    detail: jsonb('detail').$type<unknown>().notNull().default({}),
    workflowId: text('workflow_id'),
  },
  // Operators read the history of one subject, newest first.
  (t) => [index('events_subject_id_idx').on(t.subject, t.id)],
);

/**
 * Agent schema migrations applied through the migration workflow (not Forge's own drizzle migrations). Named outside
 * the agent namespace so that no agent migration can reach its own history (SCHEMA_POLICY.md "Forge's own objects").
 */
export const agentMigrations = pgTable(FORGE_TABLES.agentMigrations, {
  name: text('name').primaryKey(),
  checksum: text('checksum').notNull(),
  sql: text('sql').notNull(),
  appliedAt: timestamp('applied_at', { withTimezone: true, mode: 'date' }).notNull().defaultNow(),
  workflowId: text('workflow_id'),
  runId: text('run_id'),
  /**
   * `applied`, or `building` while the indexes it creates on core tables are built CONCURRENTLY after its transaction
   * committed (SCHEMA_POLICY.md "Round three"): running the same migration again resumes the builds.
   */
  state: text('state').notNull().default('applied'),
});

/**
 * One sandbox test of a re-verification run: the active version's test (`role` active), its immediate second test
 * (`retest`, only after a failure) and the earlier versions tried as a fallback (`candidate`). Keyed by (run, tool,
 * version, attempt), so a run that resumes after a killed worker finds what it recorded and does not test it again.
 * `action` (on the active row) is what the run did about the tool: none, flaky, quarantined, degraded, superseded,
 * error; null while undecided.
 */
export const reverifyResults = pgTable(
  FORGE_TABLES.reverifyResults,
  {
    id: bigserial('id', { mode: 'number' }).primaryKey(),
    runKey: text('run_key').notNull(),
    name: text('name').notNull(),
    version: integer('version').notNull(),
    attempt: integer('attempt').notNull().default(1),
    role: text('role').notNull(),
    verdict: text('verdict').notNull(),
    durationMs: integer('duration_ms').notNull(),
    error: text('error'),
    action: text('action'),
    workflowId: text('workflow_id'),
    at: timestamp('at', { withTimezone: true, mode: 'date' }).notNull().defaultNow(),
  },
  (t) => [unique('reverify_results_run_tool_version_attempt_key').on(t.runKey, t.name, t.version, t.attempt)],
);

/**
 * Tools re-verification moved: `quarantined` (no version passes; none is active) or `degraded` (an older version is
 * active because the newer one fails). Any other activation or removal of the tool deletes its row: what an operator
 * or a deployment does next is no longer re-verification's doing.
 */
export const toolQuarantine = pgTable(FORGE_TABLES.toolQuarantine, {
  name: text('name').primaryKey(),
  state: text('state').notNull(),
  failedVersion: integer('failed_version').notNull(),
  activeVersion: integer('active_version'),
  reason: jsonb('reason').$type<unknown>().notNull().default({}),
  runKey: text('run_key').notNull(),
  workflowId: text('workflow_id'),
  at: timestamp('at', { withTimezone: true, mode: 'date' }).notNull().defaultNow(),
});
