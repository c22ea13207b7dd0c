import { and, asc, desc, eq, sql } from 'drizzle-orm';
import type { AnyPgColumn } from 'drizzle-orm/pg-core';
import { TOOLS_CHANNEL } from './channels';
import { ToolVersionNotFoundError } from './errors';
import { activeTools, events, toolQuarantine, toolVersionCounters, toolVersions } from './schema';
import type { ForgeDatabase, ForgeDb, ForgeTx } from './types';

/** A persisted tool version, as stored. */
export type ToolVersion = typeof toolVersions.$inferSelect;
/** One active pointer: which version of a tool registries load. */
type ActiveTool = typeof activeTools.$inferSelect;
/** One row of the event log. */
type ToolEvent = typeof events.$inferSelect;
/** A tool re-verification moved: quarantined (nothing active) or degraded (an older version active). */
export type ToolQuarantine = typeof toolQuarantine.$inferSelect;

/** What re-verification asks of the store once a tool's active version failed twice (see {@link ToolStore.quarantine}). */
interface QuarantineRequest {
  name: string;
  /** The version that failed; nothing moves unless it is still the active one. */
  failedVersion: number;
  /** The newest earlier version that passed, to make active; undefined: none passed, deactivate. */
  fallbackVersion?: number;
  /** Why, for the event and `forge tools`: verdicts, errors, the versions tried. */
  reason: Record<string, unknown>;
  runKey: string;
}

/** What {@link ToolStore.quarantine} did. */
interface QuarantineResult {
  /** quarantined / degraded; superseded when the failed version was no longer active (a deployment came first). */
  state: 'quarantined' | 'degraded' | 'superseded';
  activeVersion?: number;
}

/** What the deployment persists once the sandbox passed. `version` is allocated by the store. */
export interface NewToolVersion {
  name: string;
  contentHash: string;
  sourceTs: string;
  compiledJs: string;
  testInput?: unknown;
  description?: string;
  verdict: unknown;
  workflowId?: string;
}

interface InsertVersionResult {
  /** The version number: new, or the one already stored for this (name, contentHash). */
  version: number;
  /** False when this content was already persisted (a retried activity): nothing was written. */
  created: boolean;
  row: ToolVersion;
}

interface ActivationResult {
  name: string;
  version: number;
  /** The version that was active before, if any. */
  previousVersion: number | undefined;
  /** False when `version` was already active: nothing was written and nothing notified. */
  changed: boolean;
  /** activationOfRun only: the run that made the activation, when it was recorded. */
  runId?: string;
}

/** An active version as {@link ToolStore.listActiveFingerprints} gives it. */
export interface ActiveFingerprint {
  name: string;
  version: number;
  contentHash: string;
  sourceSha256: string;
  compiledSha256: string;
}

/** What {@link ToolStore.commitVersion} did: the insert's outcome and the activation's. */
interface CommitVersionResult extends InsertVersionResult {
  /** The version that was active before, if any (equal to `version` when it already was active). */
  previousVersion: number | undefined;
  /** False when this version was already active: no pointer move, no event, no notification. */
  changed: boolean;
}

interface DeactivationResult {
  name: string;
  /** The version that was active, or undefined when the tool was not active (then nothing changed). */
  previousVersion: number | undefined;
}

interface RemovalResult extends DeactivationResult {
  /** How many stored versions were deleted. */
  removedVersions: number;
}

interface NewEvent {
  /** Dotted kind, e.g. `tool.activated`. */
  kind: string;
  /** What it is about, e.g. the tool name. */
  subject: string;
  detail?: Record<string, unknown>;
  workflowId?: string;
}

interface WorkflowRef {
  workflowId?: string;
  /**
   * The run of `workflowId`, kept in the activation's event: runs of one deployment ID (the same content submitted
   * again after the first ended) are told apart by it.
   */
  runId?: string;
}

/**
 * Tool versions, active pointers and the event log over one ForgeDatabase.
 *
 * Every write that concerns one tool first locks that tool's row in `tool_version_counters` (inserting it if
 * needed), so on PostgreSQL concurrent inserts and activations of one tool are serialised, while different tools
 * proceed in parallel. Version numbers come from that counter: they only increase, also after `removeTool`.
 * Activation, deactivation and removal notify {@link TOOLS_CHANNEL} with the tool name from inside their
 * transaction, so a listener hears of a change exactly when it is committed.
 */
export interface ToolStore {
  /** Persists a version; idempotent on (name, contentHash), which returns the existing version unchanged. */
  insertVersion(input: NewToolVersion): Promise<InsertVersionResult>;
  getVersion(name: string, version: number): Promise<ToolVersion | undefined>;
  getVersionByHash(name: string, contentHash: string): Promise<ToolVersion | undefined>;
  /** All stored versions of a tool, oldest first. */
  listVersions(name: string): Promise<ToolVersion[]>;
  getActive(name: string): Promise<ActiveTool | undefined>;
  /** The active version of `name` with its content hash (null if its row is gone), in one read. */
  getActiveWithHash(name: string): Promise<{ version: number; contentHash: string | null } | undefined>;
  /** Every active pointer, by name. */
  listActive(): Promise<ActiveTool[]>;
  /**
   * Every active version with its content hash and the SHA-256 (hex) of its source and compiled module, computed by
   * the database: what a worker's start checks agent-tools/ against without reading every stored row. By name.
   */
  listActiveFingerprints(): Promise<ActiveFingerprint[]>;
  /**
   * The active versions of `names` (absent: not active) and the newest event's id, read in one statement, so from one
   * snapshot: the pointers are at least as new as that id. What publishing one change to agent-tools/ reads.
   */
  getActivePointers(names: readonly string[]): Promise<{ newestEventId: number; active: Map<string, number> }>;
  /**
   * insertVersion + activate in ONE transaction under the tool's lock: a deployment's state change either happens
   * whole or not at all, and concurrent deployments of one tool never interleave. Idempotent on (name, contentHash):
   * a retry finds the version stored and active and changes nothing.
   */
  commitVersion(input: NewToolVersion, ref?: WorkflowRef): Promise<CommitVersionResult>;
  /** Moves the active pointer, logs `tool.activated` and notifies, in one transaction. Idempotent. */
  activate(name: string, version: number, ref?: WorkflowRef): Promise<ActivationResult>;
  /** Removes the active pointer (versions stay), logs `tool.deactivated` and notifies. Idempotent. */
  deactivate(name: string, ref?: WorkflowRef): Promise<DeactivationResult>;
  /**
   * A compensation: makes `target.version` active again (deactivates when it is undefined), but only while
   * `target.ifActive` is the active version. The check and the move are one transaction under the tool's lock, so a
   * deployment that committed in between is never undone. Idempotent.
   *
   * Without `ifActive` (the run being compensated never learnt whether its commit landed: cancelled before or while
   * it ran) the version that run activated stands in for it, found by `ref.workflowId` and `ref.runId`; a run that
   * activated nothing has nothing to undo, so a deployment of another run (another ID, or an earlier run of this one)
   * is never undone on its behalf.
   */
  restoreActive(name: string, target: { version?: number; ifActive?: number }, ref?: WorkflowRef): Promise<{ changed: boolean }>;
  /** Deactivates and deletes every stored version (the counter stays), logs `tool.removed`, notifies. Idempotent. */
  removeTool(name: string, ref?: WorkflowRef): Promise<RemovalResult>;
  /**
   * The activation the workflow `workflowId` already made of this tool, if any (from its `tool.activated` event): how
   * a step that runs again after its commit (a local activity whose marker was lost) finds what its run did, instead
   * of acting again on the state it finds.
   */
  activationOfRun(name: string, workflowId: string): Promise<ActivationResult | undefined>;
  /**
   * Re-verification's move, in ONE transaction under the tool's lock, like a rollback: only while `failedVersion` is
   * still active, activates `fallbackVersion` (degraded) or deactivates the tool (quarantined), records the state
   * row and a `tool.quarantined` / `tool.degraded` event with the reason, and notifies. Idempotent by run: a retry
   * finds this run's event and reports it without moving anything.
   */
  quarantine(request: QuarantineRequest, ref?: WorkflowRef): Promise<QuarantineResult>;
  /** The tools re-verification moved and nothing has moved since, by name. */
  listQuarantined(): Promise<ToolQuarantine[]>;
  appendEvent(event: NewEvent): Promise<ToolEvent>;
  /** Newest first. */
  listEvents(filter?: { subject?: string; limit?: number }): Promise<ToolEvent[]>;
}

/** Locks the tool's counter row for the rest of the transaction and returns the last version handed out. */
async function lockTool(tx: ForgeTx, name: string): Promise<number> {
  const [row] = await tx
    .insert(toolVersionCounters)
    .values({ name, lastVersion: 0 })
    // A no-op update still takes the row lock, which is the point.
    .onConflictDoUpdate({ target: toolVersionCounters.name, set: { name: sql`excluded.name` } })
    .returning({ lastVersion: toolVersionCounters.lastVersion });
  return row.lastVersion;
}

async function insertEvent(tx: ForgeDb | ForgeTx, event: NewEvent): Promise<ToolEvent> {
  const [row] = await tx
    .insert(events)
    .values({ kind: event.kind, subject: event.subject, detail: event.detail ?? {}, workflowId: event.workflowId })
    .returning();
  return row;
}

/** The events of one kind that the workflow `workflowId` wrote about a tool, newest first. */
function eventsOfRun(tx: ForgeDb | ForgeTx, kind: string, name: string, workflowId: string): Promise<ToolEvent[]> {
  return tx
    .select()
    .from(events)
    .where(and(eq(events.kind, kind), eq(events.subject, name), eq(events.workflowId, workflowId)))
    .orderBy(desc(events.id));
}

async function activationOfRun(tx: ForgeDb | ForgeTx, name: string, workflowId: string): Promise<ActivationResult | undefined> {
  const [earlier] = await eventsOfRun(tx, 'tool.activated', name, workflowId);
  if (!earlier) return undefined;
  const detail = earlier.detail as { version: number; previousVersion: number | null; runId?: string };
  return { name, version: detail.version, previousVersion: detail.previousVersion ?? undefined, changed: false, runId: detail.runId };
}

async function notifyTools(tx: ForgeTx, name: string): Promise<void> {
  await tx.execute(notifyToolsQuery(name));
}

/** The NOTIFY of a tool's change, as a query a statement can end with (committed with the transaction). */
function notifyToolsQuery(name: string) {
  return sql`SELECT pg_notify(${TOOLS_CHANNEL}, ${name})`;
}

/**
 * The insert half of insertVersion/commitVersion; the caller holds the tool's lock (`last` from lockTool). With
 * `activate`, a version it creates is also made active (commitVersion), in the statement that records its creation.
 */
async function insertLocked(
  tx: ForgeTx,
  input: NewToolVersion,
  last: number,
  activate?: WorkflowRef,
): Promise<InsertVersionResult & { activation?: ActivationResult }> {
  const [existing] = await tx
    .select()
    .from(toolVersions)
    .where(and(eq(toolVersions.name, input.name), eq(toolVersions.contentHash, input.contentHash)))
    .limit(1);
  if (existing) return { version: existing.version, created: false, row: existing };
  // The counter is the source of truth; max() only guards against rows written around the store. One statement each:
  // the row with its number, then the counter and the event (every round trip is paid by every deployment).
  const [row] = await tx
    .insert(toolVersions)
    .values({
      name: input.name,
      version: sql`greatest(${last}, (SELECT coalesce(max(v.version), 0) FROM ${toolVersions} v WHERE v.name = ${input.name})) + 1`,
      contentHash: input.contentHash,
      sourceTs: input.sourceTs,
      compiledJs: input.compiledJs,
      testInput: input.testInput ?? null,
      description: input.description ?? '',
      verdict: input.verdict,
      workflowId: input.workflowId,
    })
    .returning();
  const { version } = row;
  if (activate) return { version, created: true, row, activation: await activateCreatedLocked(tx, input, version, activate) };
  await tx.execute(sql`
    WITH counted AS (UPDATE ${toolVersionCounters} SET last_version = ${version} WHERE name = ${input.name})
    ${eventInsert(input.name, 'tool.version_created', { version, contentHash: input.contentHash }, input.workflowId)}`);
  return { version, created: true, row };
}

/**
 * Records a version this transaction has just inserted and makes it active: the counter, the `tool.version_created`
 * and `tool.activated` events (in that order), the pointer, the end of any quarantine and the notification, in one
 * statement. Every deployment pays each round trip, and two fewer than insert-then-activate is 5-10 ms in a busy
 * worker. The version cannot be active yet, so this always moves the pointer; `previous` reads the pointer as it was
 * when the statement began (the statement's parts share one snapshot).
 */
async function activateCreatedLocked(tx: ForgeTx, input: NewToolVersion, version: number, ref: WorkflowRef): Promise<ActivationResult> {
  const { name } = input;
  const created = JSON.stringify({ version, contentHash: input.contentHash });
  const run = JSON.stringify(ref.runId ? { runId: ref.runId } : {});
  const result = await tx.execute(sql`
    WITH previous AS (
      SELECT version FROM ${activeTools} WHERE name = ${name}
    ), counted AS (
      UPDATE ${toolVersionCounters} SET last_version = ${version} WHERE name = ${name}
    ), ${pointerMoved(name, version)}, logged AS (
      INSERT INTO ${events} (kind, subject, detail, workflow_id) VALUES
        ('tool.version_created', ${name}, ${created}::jsonb, ${input.workflowId ?? null}),
        ('tool.activated', ${name}, jsonb_build_object('version', ${version}::integer, 'previousVersion', (SELECT version FROM previous)) || ${run}::jsonb, ${ref.workflowId ?? null})
    )
    SELECT (SELECT version FROM previous) AS previous_version, pg_notify(${TOOLS_CHANNEL}, ${name})`);
  const [{ previous_version: previous }] = (result as unknown as { rows: { previous_version: number | null }[] }).rows;
  return { name, version, previousVersion: previous ?? undefined, changed: true };
}

/** The parts of a statement that move the pointer to `version` and end any quarantine (as `activated`, `released`). */
function pointerMoved(name: string, version: number) {
  return sql`activated AS (
      INSERT INTO ${activeTools} (name, version, updated_at) VALUES (${name}, ${version}, now())
      ON CONFLICT (name) DO UPDATE SET version = excluded.version, updated_at = excluded.updated_at
    ), released AS (
      DELETE FROM ${toolQuarantine} WHERE name = ${name}
    )`;
}

/** The pointer move of activate/restoreActive/quarantine; the caller holds the tool's lock. */
async function activateLocked(tx: ForgeTx, name: string, version: number, ref: WorkflowRef): Promise<ActivationResult> {
  const [target] = await tx
    .select({ id: toolVersions.id })
    .from(toolVersions)
    .where(and(eq(toolVersions.name, name), eq(toolVersions.version, version)))
    .limit(1);
  if (!target) throw new ToolVersionNotFoundError(name, version);
  const [current] = await tx.select().from(activeTools).where(eq(activeTools.name, name)).limit(1);
  if (current?.version === version) return { name, version, previousVersion: version, changed: false };
  const detail = { version, previousVersion: current?.version ?? null, ...(ref.runId ? { runId: ref.runId } : {}) };
  // The pointer, the end of any quarantine, the event and the notification: one statement (one round trip).
  await tx.execute(sql`
    WITH ${pointerMoved(name, version)}, logged AS (${eventInsert(name, 'tool.activated', detail, ref.workflowId)})
    ${notifyToolsQuery(name)}`);
  return { name, version, previousVersion: current?.version, changed: true };
}

/** The pointer removal of deactivate/restoreActive; the caller holds the tool's lock. */
async function deactivateLocked(tx: ForgeTx, name: string, ref: WorkflowRef): Promise<DeactivationResult> {
  const [removed] = await tx.delete(activeTools).where(eq(activeTools.name, name)).returning({ version: activeTools.version });
  if (!removed) return { name, previousVersion: undefined };
  await tx.execute(sql`
    WITH released AS (
      DELETE FROM ${toolQuarantine} WHERE name = ${name}
    ), logged AS (${eventInsert(name, 'tool.deactivated', { previousVersion: removed.version }, ref.workflowId)})
    ${notifyToolsQuery(name)}`);
  return { name, previousVersion: removed.version };
}

/** An INSERT of one event, to run inside a statement with others (insertEvent is the one that returns the row). */
function eventInsert(subject: string, kind: string, detail: unknown, workflowId: string | undefined) {
  return sql`INSERT INTO ${events} (kind, subject, detail, workflow_id) VALUES (${kind}, ${subject}, ${JSON.stringify(detail)}::jsonb, ${workflowId ?? null})`;
}

/** Builds the store over an open database (see {@link ToolStore} for the guarantees). */
export function createToolStore(database: Pick<ForgeDatabase, 'db'>): ToolStore {
  const { db } = database;

  return {
    insertVersion(input) {
      return db.transaction(async (tx) => insertLocked(tx, input, await lockTool(tx, input.name)));
    },

    commitVersion(input, ref = {}) {
      return db.transaction(async (tx) => {
        const { activation, ...inserted } = await insertLocked(tx, input, await lockTool(tx, input.name), ref);
        if (activation) return { ...inserted, previousVersion: activation.previousVersion, changed: true };
        // Idempotent by its run, not by the state it finds: a commit that runs again after its first attempt landed
        // (a worker killed before Temporal recorded the step) reports what that attempt did, and does not activate
        // its version again over the newer ones other deployments committed meanwhile.
        // The run, not only the workflow ID: the same content submitted again after its first run ended reuses the ID
        // (tool-deploy/<name>/<hash>), and that later run is a redeployment that must activate it.
        if (!inserted.created && ref.workflowId !== undefined) {
          const earlier = await activationOfRun(tx, input.name, ref.workflowId);
          if (earlier?.version === inserted.version && earlier.runId === ref.runId) {
            return { ...inserted, previousVersion: earlier.previousVersion, changed: false };
          }
        }
        const activated = await activateLocked(tx, input.name, inserted.version, ref);
        return { ...inserted, previousVersion: activated.previousVersion, changed: activated.changed };
      });
    },

    async getVersion(name, version) {
      const [row] = await db
        .select()
        .from(toolVersions)
        .where(and(eq(toolVersions.name, name), eq(toolVersions.version, version)))
        .limit(1);
      return row;
    },

    async getVersionByHash(name, contentHash) {
      const [row] = await db
        .select()
        .from(toolVersions)
        .where(and(eq(toolVersions.name, name), eq(toolVersions.contentHash, contentHash)))
        .limit(1);
      return row;
    },

    listVersions(name) {
      return db.select().from(toolVersions).where(eq(toolVersions.name, name)).orderBy(asc(toolVersions.version));
    },

    async getActive(name) {
      const [row] = await db.select().from(activeTools).where(eq(activeTools.name, name)).limit(1);
      return row;
    },

    async getActiveWithHash(name) {
      const [row] = await db
        .select({ version: activeTools.version, contentHash: toolVersions.contentHash })
        .from(activeTools)
        .leftJoin(toolVersions, and(eq(toolVersions.name, activeTools.name), eq(toolVersions.version, activeTools.version)))
        .where(eq(activeTools.name, name))
        .limit(1);
      return row;
    },

    listActive() {
      return db.select().from(activeTools).orderBy(asc(activeTools.name));
    },

    listActiveFingerprints() {
      const sha256 = (column: AnyPgColumn) => sql<string>`encode(sha256(convert_to(${column}, 'UTF8')), 'hex')`;
      return db
        .select({
          name: activeTools.name,
          version: activeTools.version,
          contentHash: toolVersions.contentHash,
          sourceSha256: sha256(toolVersions.sourceTs),
          compiledSha256: sha256(toolVersions.compiledJs),
        })
        .from(activeTools)
        .innerJoin(toolVersions, and(eq(toolVersions.name, activeTools.name), eq(toolVersions.version, activeTools.version)))
        .orderBy(asc(activeTools.name));
    },

    async getActivePointers(names) {
      // One row even when none of `names` is active: the event id comes from the left side of the join.
      const wanted =
        names.length > 0
          ? sql`a.name IN (${sql.join(
              names.map((n) => sql`${n}`),
              sql`, `,
            )})`
          : sql`false`;
      const result = await db.execute(sql`
        SELECT e.newest, a.name, a.version
        FROM (SELECT max(id) AS newest FROM ${events}) e LEFT JOIN ${activeTools} a ON ${wanted}`);
      const rows = (result as unknown as { rows: { newest: number | string | null; name: string | null; version: number | null }[] }).rows;
      const active = new Map<string, number>();
      for (const row of rows) if (row.name !== null && row.version !== null) active.set(row.name, Number(row.version));
      return { newestEventId: Number(rows[0]?.newest ?? 0), active };
    },

    activate(name, version, ref = {}) {
      return db.transaction(async (tx) => {
        await lockTool(tx, name);
        // Once per run: an attempt that committed before it could report must not move the pointer a second time.
        const earlier = ref.workflowId === undefined ? undefined : await activationOfRun(tx, name, ref.workflowId);
        return earlier ?? activateLocked(tx, name, version, ref);
      });
    },

    activationOfRun(name, workflowId) {
      return activationOfRun(db, name, workflowId);
    },

    deactivate(name, ref = {}) {
      return db.transaction(async (tx) => {
        await lockTool(tx, name);
        return deactivateLocked(tx, name, ref);
      });
    },

    restoreActive(name, target, ref = {}) {
      return db.transaction(async (tx) => {
        await lockTool(tx, name);
        let ifActive = target.ifActive;
        if (ifActive === undefined && ref.workflowId !== undefined) {
          const ours = await activationOfRun(tx, name, ref.workflowId);
          // An activation by an earlier run of the same ID is not this run's to undo.
          if (!ours || (ref.runId !== undefined && ours.runId !== ref.runId)) return { changed: false };
          ifActive = ours.version;
        }
        if (ifActive !== undefined) {
          const [current] = await tx.select({ version: activeTools.version }).from(activeTools).where(eq(activeTools.name, name)).limit(1);
          if (current?.version !== ifActive) return { changed: false };
        }
        // The restore's own event names the workflow but no run: it is no run's activation of its version.
        const logged = { workflowId: ref.workflowId };
        if (target.version !== undefined) return { changed: (await activateLocked(tx, name, target.version, logged)).changed };
        return { changed: (await deactivateLocked(tx, name, logged)).previousVersion !== undefined };
      });
    },

    removeTool(name, ref = {}) {
      return db.transaction(async (tx) => {
        await lockTool(tx, name);
        const [active] = await tx.delete(activeTools).where(eq(activeTools.name, name)).returning({ version: activeTools.version });
        const deleted = await tx.delete(toolVersions).where(eq(toolVersions.name, name)).returning({ version: toolVersions.version });
        await tx.delete(toolQuarantine).where(eq(toolQuarantine.name, name));
        if (!active && deleted.length === 0) {
          // Nothing left: perhaps because this very run removed it in an attempt that could not report.
          const [earlier] = ref.workflowId === undefined ? [] : await eventsOfRun(tx, 'tool.removed', name, ref.workflowId);
          if (earlier) {
            const detail = earlier.detail as { previousVersion: number | null; removedVersions: number[] };
            return { name, previousVersion: detail.previousVersion ?? undefined, removedVersions: detail.removedVersions.length };
          }
          return { name, previousVersion: undefined, removedVersions: 0 };
        }
        await insertEvent(tx, {
          kind: 'tool.removed',
          subject: name,
          detail: { previousVersion: active?.version ?? null, removedVersions: deleted.map((d) => d.version) },
          workflowId: ref.workflowId,
        });
        await notifyTools(tx, name);
        return { name, previousVersion: active?.version, removedVersions: deleted.length };
      });
    },

    quarantine(request, ref = {}) {
      const { name } = request;
      return db.transaction(async (tx): Promise<QuarantineResult> => {
        await lockTool(tx, name);
        for (const kind of ['tool.quarantined', 'tool.degraded', 'tool.reverify_superseded']) {
          const [earlier] = ref.workflowId === undefined ? [] : await eventsOfRun(tx, kind, name, ref.workflowId);
          const detail = earlier?.detail as { runKey?: string; state: QuarantineResult['state']; activeVersion?: number } | undefined;
          if (detail?.runKey === request.runKey) return { state: detail.state, activeVersion: detail.activeVersion };
        }
        const [current] = await tx.select().from(activeTools).where(eq(activeTools.name, name)).limit(1);
        const detail = { ...request.reason, runKey: request.runKey, failedVersion: request.failedVersion };
        if (current?.version !== request.failedVersion) {
          // A deployment or an operator moved the tool since it was tested: theirs stands.
          const state = 'superseded' as const;
          await insertEvent(tx, {
            kind: 'tool.reverify_superseded',
            subject: name,
            detail: { ...detail, state, activeVersion: current?.version },
            workflowId: ref.workflowId,
          });
          return { state, activeVersion: current?.version };
        }
        const state = request.fallbackVersion === undefined ? ('quarantined' as const) : ('degraded' as const);
        if (request.fallbackVersion === undefined) await deactivateLocked(tx, name, ref);
        else await activateLocked(tx, name, request.fallbackVersion, ref);
        const row = {
          state,
          failedVersion: request.failedVersion,
          activeVersion: request.fallbackVersion ?? null,
          reason: request.reason,
          runKey: request.runKey,
          workflowId: ref.workflowId,
        };
        await tx
          .insert(toolQuarantine)
          .values({ name, ...row })
          .onConflictDoUpdate({ target: toolQuarantine.name, set: { ...row, at: sql`now()` } });
        await insertEvent(tx, {
          kind: `tool.${state}`,
          subject: name,
          detail: { ...detail, state, activeVersion: request.fallbackVersion },
          workflowId: ref.workflowId,
        });
        // activate/deactivate notified already; once more is harmless and keeps this move's notice after its row.
        await notifyTools(tx, name);
        return { state, activeVersion: request.fallbackVersion };
      });
    },

    listQuarantined() {
      return db.select().from(toolQuarantine).orderBy(asc(toolQuarantine.name));
    },

    appendEvent(event) {
      return insertEvent(db, event);
    },

    listEvents(filter = {}) {
      const query = db.select().from(events);
      const filtered = filter.subject === undefined ? query : query.where(eq(events.subject, filter.subject));
      return filtered.orderBy(desc(events.id)).limit(filter.limit ?? 100);
    },
  };
}
