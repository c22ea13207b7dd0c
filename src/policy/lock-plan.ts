import type { Node } from 'libpg-query';
import { identifiersOf } from './identifiers';
import { isAgentName, showIdent } from './names';
import type { RawStatement } from './read-statements';
import { reject, type Verdict } from './verdict';
import { parseSql, scanSql } from './parser';
import { readStatements } from './read-statements';
import { findInTree } from './walk';

/**
 * How one accepted statement meets the application's tables (SCHEMA_POLICY.md "Round three", locks stay short): the
 * core tables it names, and so may lock, and whether it is an index on a core table, which Forge builds
 * `CONCURRENTLY` outside the migration's transaction on PostgreSQL.
 */
export interface StatementLockPlan {
  /** Relations the statement names that are not the agent's (core tables, in practice), lowercase as parsed. */
  coreTables: string[];
  /** Every relation the statement names, the agent's too (whose locks a 55P03 may have waited for). */
  relations: string[];
  /** Set for `CREATE INDEX agent_… ON <core table>`: the index and its table. */
  coreIndex?: { index: string; table: string };
}

/**
 * The lock plan of every statement of an accepted migration, in order. A name is counted when it sits in a relation
 * reference anywhere in the tree (the target, a foreign key's referenced table, a view's FROM) or is the table of a
 * `COMMENT ON COLUMN`: conservative, since a wrongly counted name only shortens that statement's lock timeout.
 * The parser must be loaded (checkMigration loads it; this runs after it).
 */
export function planLocks(sql: string): StatementLockPlan[] {
  return readStatements(sql).map((raw) => (raw.node ? planStatement(raw.node) : { coreTables: [], relations: [] }));
}

/**
 * The `core-index-named-later` verdicts of a migration (SCHEMA_POLICY.md "Round three", locks stay short): a statement
 * that names an index the same migration creates on a core table (a COMMENT ON INDEX, an ALTER or DROP INDEX) is
 * refused, because on PostgreSQL that index is built CONCURRENTLY after the transaction, where nothing of the
 * transaction can reach it; building it in the transaction instead would lock the application's table for the whole
 * build. The same on PGlite, so that a verdict never depends on the backend. Others get `undefined`.
 */
export function namedLaterVerdicts(sql: string, raws: RawStatement[]): (Verdict | undefined)[] {
  const created = new Map<string, number>();
  raws.forEach((raw, i) => {
    const index = raw.node ? planStatement(raw.node).coreIndex : undefined;
    if (index) created.set(index.index, i);
  });
  if (created.size === 0) return raws.map(() => undefined);
  return raws.map((raw, i) => {
    if (!raw.node || created.get(planStatement(raw.node).coreIndex?.index ?? '') === i) return undefined;
    const named = identifiersOf(sql.slice(raw.start, raw.end)).find((name) => created.has(name));
    if (named === undefined) return undefined;
    return reject(
      'core-index-named-later',
      `Index ${showIdent(named)} is created on a core table by statement ${created.get(named)} of this migration, and ` +
        "Forge builds such an index CONCURRENTLY after the migration's transaction (so the application's writes never " +
        'wait for the build): nothing in the transaction can refer to it. Put this statement in a later migration.',
    );
  });
}

function planStatement(node: Node): StatementLockPlan {
  const names = new Set<string>();
  findInTree(node, (n) => {
    if (typeof n.relname === 'string') names.add(n.relname);
    return undefined;
  });
  if ('CommentStmt' in node && node.CommentStmt.objtype === 'OBJECT_COLUMN') {
    const parts = listStrings(node.CommentStmt.object);
    const table = parts[parts.length - 2];
    if (table !== undefined) names.add(table);
  }
  const relations = [...names].sort();
  const plan: StatementLockPlan = { coreTables: relations.filter((r) => !isAgentName(r)), relations };
  if ('IndexStmt' in node) {
    const { idxname, relation } = node.IndexStmt;
    if (idxname !== undefined && relation?.relname !== undefined && !isAgentName(relation.relname)) {
      plan.coreIndex = { index: idxname, table: relation.relname };
    }
  }
  return plan;
}

function listStrings(object: Node | undefined): string[] {
  const items = object && 'List' in object ? (object.List.items ?? []) : [];
  return items.flatMap((item) => ('String' in item && item.String.sval !== undefined ? [item.String.sval] : []));
}

/**
 * `CREATE INDEX …` as `CREATE INDEX CONCURRENTLY …`: the keyword goes right after the first INDEX token (the grammar
 * is `CREATE [UNIQUE] INDEX [CONCURRENTLY] …`, comments anywhere), and the result is parsed again and must be the same
 * statement with `concurrent` set, else this throws: a rewrite that changed anything else never runs.
 */
export function concurrentIndexSql(text: string): string {
  const tokens = scanSql(text).tokens ?? [];
  // The scanner names keyword tokens UNKNOWN: a keyword is told by its kind and text.
  const indexToken = tokens.find((t) => t.keywordKind !== 0 && t.text.toUpperCase() === 'INDEX');
  if (!indexToken) throw new Error('not a CREATE INDEX statement: no INDEX keyword');
  const bytes = Buffer.from(text, 'utf8');
  const rewritten = `${bytes.subarray(0, indexToken.end).toString('utf8')} CONCURRENTLY${bytes.subarray(indexToken.end).toString('utf8')}`;
  const before = onlyStatement(text);
  const after = onlyStatement(rewritten);
  if (!('IndexStmt' in before) || !('IndexStmt' in after) || before.IndexStmt.concurrent || !after.IndexStmt.concurrent) {
    throw new Error(`the CONCURRENTLY rewrite of ${JSON.stringify(text.slice(0, 80))} is not the same index`);
  }
  if (shape({ ...before.IndexStmt, concurrent: true }) !== shape(after.IndexStmt)) {
    throw new Error(`the CONCURRENTLY rewrite of ${JSON.stringify(text.slice(0, 80))} changed the statement`);
  }
  return rewritten;
}

function onlyStatement(text: string): Node {
  const stmts = parseSql(text).stmts ?? [];
  if (stmts.length !== 1 || !stmts[0].stmt) throw new Error('expected exactly one statement');
  return stmts[0].stmt;
}

/** A tree as JSON without its byte offsets (the rewrite moves everything after INDEX), keys in sorted order. */
function shape(tree: unknown): string {
  return JSON.stringify(tree, (key, value: unknown) => {
    // Byte offsets: `location`, and the list bounds of an IN (`rexpr_list_start`, `rexpr_list_end`) and the like.
    if (typeof value === 'number' && /(^|_)(location|start|end)$/.test(key)) return undefined;
    if (value === null || typeof value !== 'object' || Array.isArray(value)) return value;
    return Object.fromEntries(Object.entries(value).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
  });
}
