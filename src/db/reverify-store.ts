import { and, asc, eq, gt, inArray, sql } from 'drizzle-orm';
import { activeTools, reverifyResults, toolVersions } from './schema';
import type { ForgeDatabase } from './types';

/** One recorded sandbox test of a re-verification run. */
export type ReverifyResultRow = typeof reverifyResults.$inferSelect;

/** What a re-verification test records; (runKey, name, version, attempt) is its key. */
interface NewReverifyResult {
  runKey: string;
  name: string;
  version: number;
  attempt: number;
  role: 'active' | 'retest' | 'candidate';
  verdict: string;
  durationMs: number;
  error?: string;
  action?: string;
  workflowId?: string;
}

/** An active tool a re-verification batch tests, with what this run recorded of it already. */
interface ReverifyCandidate {
  name: string;
  version: number;
  /** Stored versions below the active one, newest first: the fallbacks to try. */
  earlier: number[];
}

/** The rows of re-verification runs (reverify_results). */
export interface ReverifyStore {
  /**
   * Records one test; idempotent on (runKey, name, version, attempt): a second record of the same key keeps the
   * first and returns it, so a retried activity reports what was recorded.
   */
  record(result: NewReverifyResult): Promise<ReverifyResultRow>;
  /** The recorded test of one key, if any. */
  find(key: { runKey: string; name: string; version: number; attempt: number }): Promise<ReverifyResultRow | undefined>;
  /** Sets the action on the row of `result`'s key; inserts `result` when no test recorded it (an error). */
  settle(result: NewReverifyResult & { action: string }): Promise<void>;
  /** Active tools after `after` (by name), at most `limit`, with their earlier versions. */
  activeBatch(after: string | undefined, limit: number): Promise<ReverifyCandidate[]>;
  /** Every row of a run of the given role, by name. */
  rowsOfRun(runKey: string, role?: NewReverifyResult['role']): Promise<ReverifyResultRow[]>;
}

export function createReverifyStore(database: Pick<ForgeDatabase, 'db'>): ReverifyStore {
  const { db } = database;
  const keyOf = (k: { runKey: string; name: string; version: number; attempt: number }) =>
    and(eq(reverifyResults.runKey, k.runKey), eq(reverifyResults.name, k.name), eq(reverifyResults.version, k.version), eq(reverifyResults.attempt, k.attempt));
  const store: ReverifyStore = {
    async record(result) {
      const [inserted] = await db
        .insert(reverifyResults)
        .values({ ...result, error: result.error ?? null, action: result.action ?? null })
        .onConflictDoNothing()
        .returning();
      return inserted ?? (await store.find(result))!;
    },

    async find(key) {
      const [row] = await db.select().from(reverifyResults).where(keyOf(key)).limit(1);
      return row;
    },

    async settle(result) {
      await db
        .insert(reverifyResults)
        .values({ ...result, error: result.error ?? null })
        .onConflictDoUpdate({
          target: [reverifyResults.runKey, reverifyResults.name, reverifyResults.version, reverifyResults.attempt],
          set: { action: result.action },
        });
    },

    async activeBatch(after, limit) {
      const pointers = await db
        .select()
        .from(activeTools)
        .where(after === undefined ? undefined : gt(activeTools.name, after))
        .orderBy(asc(activeTools.name))
        .limit(limit);
      if (pointers.length === 0) return [];
      const versions = await db
        .select({ name: toolVersions.name, version: toolVersions.version })
        .from(toolVersions)
        .where(
          inArray(
            toolVersions.name,
            pointers.map((p) => p.name),
          ),
        )
        .orderBy(asc(toolVersions.name), sql`${toolVersions.version} DESC`);
      return pointers.map((p) => ({
        name: p.name,
        version: p.version,
        earlier: versions.filter((v) => v.name === p.name && v.version < p.version).map((v) => v.version),
      }));
    },

    rowsOfRun(runKey, role) {
      return db
        .select()
        .from(reverifyResults)
        .where(and(eq(reverifyResults.runKey, runKey), role === undefined ? undefined : eq(reverifyResults.role, role)))
        .orderBy(asc(reverifyResults.name), asc(reverifyResults.version), asc(reverifyResults.attempt));
    },
  };
  return store;
}
