import { sql } from 'drizzle-orm';
import type { CoreColumnFacts, CoreTablesUsage } from '../contract/policy-verdict';
import type { ForgeDatabase } from './types';

/**
 * What each core table of `schema` carries of the agent's now, for the round-three rules of SCHEMA_POLICY.md: its
 * `agent_` columns and `agent_` indexes (the caps; the judge counts a migration's additions on top), and every
 * column's type (the width of an index on it). Core tables are the ordinary and partitioned tables whose names are
 * outside the agent namespace. Read-only; two catalog queries.
 */
export async function readCoreTableUsage(database: ForgeDatabase, schema: string): Promise<CoreTablesUsage> {
  const tables = (await database.db.execute(
    sql`SELECT c.relname AS table,
               (SELECT count(*) FROM pg_attribute a
                 WHERE a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped AND starts_with(a.attname, 'agent_'))::int AS columns,
               (SELECT count(*) FROM pg_index i JOIN pg_class ic ON ic.oid = i.indexrelid
                 WHERE i.indrelid = c.oid AND starts_with(ic.relname, 'agent_'))::int AS indexes
          FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
         WHERE n.nspname = ${schema} AND c.relkind IN ('r', 'p') AND NOT starts_with(c.relname, 'agent_')`,
  )) as unknown as { rows: Array<{ table: string; columns: number; indexes: number }> };
  // A domain is judged by its base type (one level: a domain over a domain is of unknown width, so unbounded).
  const columns = (await database.db.execute(
    sql`SELECT c.relname AS table, a.attname AS column, bt.typname AS type, bt.typlen AS length,
               CASE WHEN t.typtype = 'd' THEN t.typtypmod ELSE a.atttypmod END AS typmod,
               et.typlen AS element_length, rt.typlen AS range_subtype_length,
               EXISTS (SELECT 1 FROM pg_index i JOIN pg_class ic ON ic.oid = i.indexrelid
                        WHERE i.indrelid = c.oid AND i.indpred IS NULL AND NOT starts_with(ic.relname, 'agent_')
                          AND a.attnum = ANY (i.indkey::int2[])) AS app_indexed,
               CASE WHEN starts_with(a.attname, 'agent_') THEN
                 coalesce((SELECT octet_length(pg_get_expr(d.adbin, d.adrelid)) FROM pg_attrdef d
                            WHERE d.adrelid = c.oid AND d.adnum = a.attnum), 0) END AS default_bytes,
               NOT coalesce((SELECT co.collisdeterministic FROM pg_collation co WHERE co.oid = a.attcollation), true) AS nondeterministic
          FROM pg_class c
          JOIN pg_namespace n ON n.oid = c.relnamespace
          JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
          JOIN pg_type t ON t.oid = a.atttypid
          JOIN pg_type bt ON bt.oid = CASE WHEN t.typtype = 'd' THEN t.typbasetype ELSE t.oid END
          LEFT JOIN pg_type et ON et.oid = bt.typelem AND bt.typlen = -1 AND bt.typelem <> 0
          LEFT JOIN pg_range r ON r.rngtypid = bt.oid
          LEFT JOIN pg_type rt ON rt.oid = r.rngsubtype
         WHERE n.nspname = ${schema} AND c.relkind IN ('r', 'p') AND NOT starts_with(c.relname, 'agent_')`,
  )) as unknown as {
    rows: Array<{
      table: string;
      column: string;
      type: string;
      length: number;
      typmod: number;
      element_length: number | null;
      range_subtype_length: number | null;
      app_indexed: boolean;
      default_bytes: number | null;
      nondeterministic: boolean;
    }>;
  };
  const columnsOf = new Map<string, Record<string, CoreColumnFacts>>();
  for (const row of columns.rows) {
    let of = columnsOf.get(row.table);
    if (!of) columnsOf.set(row.table, (of = {}));
    of[row.column] = {
      type: row.type,
      length: Number(row.length),
      typmod: Number(row.typmod),
      ...(row.element_length === null ? {} : { elementLength: Number(row.element_length) }),
      ...(row.range_subtype_length === null ? {} : { rangeSubtypeLength: Number(row.range_subtype_length) }),
      appIndexed: isTrue(row.app_indexed),
      ...(row.default_bytes === null ? {} : { defaultBytes: Number(row.default_bytes) }),
      ...(isTrue(row.nondeterministic) ? { nondeterministic: true as const } : {}),
    };
  }
  const usage: Record<string, { agentColumns: number; agentIndexes: number; columns: Record<string, CoreColumnFacts> }> = {};
  for (const row of tables.rows) {
    usage[row.table] = { agentColumns: Number(row.columns), agentIndexes: Number(row.indexes), columns: columnsOf.get(row.table) ?? {} };
  }
  return usage;
}

/** A boolean column as either driver returns it (node-postgres and PGlite parse it; a text protocol would say 't'). */
function isTrue(value: unknown): boolean {
  return value === true || value === 't';
}
