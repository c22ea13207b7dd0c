import type { Node } from 'libpg-query';
import type { CoreTableUsage, CoreTablesUsage } from '../contract/policy-verdict';
import { MAX_AGENT_COLUMNS_PER_CORE_TABLE, MAX_AGENT_INDEXES_PER_CORE_TABLE } from '../contract/limits';
import { isAgentName, showIdent } from './names';
import type { Verdict } from './verdict';
import { reject } from './verdict';

export type { CoreTablesUsage };

/**
 * The cap verdicts of a migration (SCHEMA_POLICY.md "Round three", counts): walking the statements in order, the
 * first statement that takes a core table past MAX_AGENT_COLUMNS_PER_CORE_TABLE agent columns or
 * MAX_AGENT_INDEXES_PER_CORE_TABLE agent indexes, counted with what the table has already (`existing`), gets a
 * refusal; the others `undefined`. A dropped index is not subtracted (its table is not in the statement).
 */
export function capVerdicts(nodes: (Node | undefined)[], existing: CoreTablesUsage = {}): (Verdict | undefined)[] {
  const usage = new Map<string, CoreTableUsage>();
  const of = (table: string): CoreTableUsage => {
    let u = usage.get(table);
    if (!u) usage.set(table, (u = { ...(Object.hasOwn(existing, table) ? existing[table] : { agentColumns: 0, agentIndexes: 0 }) }));
    return u;
  };
  return nodes.map((node) => {
    if (!node) return undefined;
    if ('AlterTableStmt' in node) {
      const s = node.AlterTableStmt;
      const table = s.relation?.relname;
      if ((s.objtype ?? 'OBJECT_TABLE') !== 'OBJECT_TABLE' || table === undefined || isAgentName(table)) return undefined;
      const adds = (s.cmds ?? []).filter((c) => 'AlterTableCmd' in c && c.AlterTableCmd.subtype === 'AT_AddColumn').length;
      if (adds === 0) return undefined;
      const u = of(table);
      const before = u.agentColumns;
      u.agentColumns += adds;
      return u.agentColumns > MAX_AGENT_COLUMNS_PER_CORE_TABLE ? columnCap(table, before, adds) : undefined;
    }
    if ('IndexStmt' in node) {
      const table = node.IndexStmt.relation?.relname;
      if (table === undefined || isAgentName(table)) return undefined;
      const u = of(table);
      u.agentIndexes += 1;
      return u.agentIndexes > MAX_AGENT_INDEXES_PER_CORE_TABLE ? indexCap(table, u.agentIndexes - 1) : undefined;
    }
    return undefined;
  });
}

function columnCap(table: string, before: number, adds: number): Verdict {
  return reject(
    'core-column-cap',
    `This statement would give core table ${showIdent(table)} ${before + adds} agent columns (${before} counted ` +
      `before it, this migration's earlier statements and the table's present columns included); at most ` +
      `${MAX_AGENT_COLUMNS_PER_CORE_TABLE} are allowed. Each one runs its DEFAULT on the application's inserts, and a ` +
      "table's 1,600-column limit counts dropped columns too, so columns without bound would one day refuse the " +
      "application's own ADD COLUMN. Keep the values in an agent_ side table keyed by the core row " +
      `(CREATE TABLE agent_${table}_extra (${table}_id ... PRIMARY KEY REFERENCES ${showIdent(table)}, ...)), or a jsonb column.`,
  );
}

function indexCap(table: string, before: number): Verdict {
  return reject(
    'core-index-cap',
    `This index would be agent index number ${before + 1} on core table ${showIdent(table)} (${before} counted ` +
      `before it, present ones included); at most ${MAX_AGENT_INDEXES_PER_CORE_TABLE} are allowed, because every ` +
      "index is maintained on each of the application's writes. Drop one you no longer need (DROP INDEX agent_...) " +
      'in an earlier migration, or index an agent_ side table instead.',
  );
}
