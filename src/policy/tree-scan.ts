import { foreignSchema } from './create-rules';
import { showQualified } from './names';
import type { RuleContext, Verdict } from './verdict';

/** Keys whose string values are identifiers in libpg_query's JSON parse tree. */
const IDENTIFIER_KEYS = new Set([
  'relname',
  'schemaname',
  'catalogname',
  'colname',
  'conname',
  'idxname',
  'indexname',
  'newname',
  'subname',
  'name',
  'aliasname',
  'ctename',
]);

/** What a walk over one statement's parse tree found. */
export interface TreeFacts {
  /** Every identifier the statement names (created or referenced), as folded by the parser. */
  identifiers: string[];
  /** The first relation, type or function named in a schema other than the configured one. */
  foreignSchema?: Verdict;
}

/**
 * Walks a statement's parse tree once, collecting its identifiers (for the 63-byte limit) and the first name
 * qualified with a schema other than the configured one. Relations (RangeVar, whether bare or wrapped) count wherever
 * they appear, also inside a view's query or a REFERENCES clause; type and function names may also name pg_catalog,
 * because the parser itself qualifies built-ins that way (`int` arrives as pg_catalog.int4).
 */
export function scanTree(node: unknown, ctx: RuleContext): TreeFacts {
  const facts: TreeFacts = { identifiers: [] };
  const visit = (value: unknown, key: string | undefined): void => {
    if (Array.isArray(value)) {
      for (const item of value) visit(item, key);
      return;
    }
    if (value === null || typeof value !== 'object') return;
    const obj = value as Record<string, unknown>;
    if (key === 'String' && typeof obj.sval === 'string') facts.identifiers.push(obj.sval);
    // A_Const holds literals (their `sval` is not an identifier): nothing below it is a name.
    if (key === 'A_Const') return;
    if (typeof obj.relname === 'string') checkRelation(obj, facts, ctx);
    if (Array.isArray(obj.names) && 'typemod' in obj) checkQualified(stringList(obj.names), facts, ctx);
    if (Array.isArray(obj.funcname)) checkQualified(stringList(obj.funcname), facts, ctx);
    for (const [k, v] of Object.entries(obj)) {
      if (typeof v === 'string') {
        if (IDENTIFIER_KEYS.has(k)) facts.identifiers.push(v);
      } else {
        visit(v, k);
      }
    }
  };
  visit(node, undefined);
  return facts;
}

function checkRelation(rel: Record<string, unknown>, facts: TreeFacts, ctx: RuleContext): void {
  if (facts.foreignSchema) return;
  const schema = rel.schemaname;
  if (rel.catalogname !== undefined || (schema !== undefined && schema !== ctx.schema)) {
    const parts = [rel.catalogname, schema, rel.relname].filter((p): p is string => typeof p === 'string');
    facts.foreignSchema = foreignSchema(showQualified(parts), ctx);
  }
}

function checkQualified(names: string[], facts: TreeFacts, ctx: RuleContext): void {
  if (facts.foreignSchema || names.length < 2) return;
  const qualifier = names[names.length - 2];
  if (names.length > 2 || (qualifier !== ctx.schema && qualifier !== 'pg_catalog')) {
    facts.foreignSchema = foreignSchema(showQualified(names), ctx);
  }
}

function stringList(list: unknown[]): string[] {
  const out: string[] = [];
  for (const item of list) {
    const s = (item as { String?: { sval?: unknown } }).String?.sval;
    if (typeof s === 'string') out.push(s);
  }
  return out;
}
