import { sql } from 'drizzle-orm';
import type { CoreTablesUsage } from '../contract/policy-verdict';
import type { ForgeDatabase } from './types';

/**
 * What each core table of `schema` carries of the agent's now: its `agent_` columns and `agent_` indexes, for the
 * caps of SCHEMA_POLICY.md "Round three" (the judge counts a migration's additions on top). Core tables are the
 * ordinary and partitioned tables whose names are outside the agent namespace; tables that carry nothing are left
 * out. Read-only.
 */
export async function readCoreTableUsage(database: ForgeDatabase, schema: string): Promise<CoreTablesUsage> {
  const result = (await database.db.execute(
    sql`SELECT c.relname AS table,
               (SELECT count(*) FROM pg_attribute a
                 WHERE a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped AND starts_with(a.attname, 'agent_'))::int AS columns,
               (SELECT count(*) FROM pg_index i JOIN pg_class ic ON ic.oid = i.indexrelid
                 WHERE i.indrelid = c.oid AND starts_with(ic.relname, 'agent_'))::int AS indexes
          FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
         WHERE n.nspname = ${schema} AND c.relkind IN ('r', 'p') AND NOT starts_with(c.relname, 'agent_')`,
  )) as unknown as { rows: Array<{ table: string; columns: number; indexes: number }> };
  const usage: Record<string, { agentColumns: number; agentIndexes: number }> = {};
  for (const row of result.rows) {
    const agentColumns = Number(row.columns);
    const agentIndexes = Number(row.indexes);
    if (agentColumns > 0 || agentIndexes > 0) usage[row.table] = { agentColumns, agentIndexes };
  }
  return usage;
}
