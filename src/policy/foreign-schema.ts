import { foreignSchema } from './create-rules';
import { showQualified } from './names';
import type { RuleContext, Verdict } from './verdict';

/** What a walk over one statement's parse tree found. */
export interface TreeFacts {
  /** The first relation, type or function named in a schema other than the configured one. */
  foreignSchema?: Verdict;
}

/**
 * Walks a statement's parse tree for the first name qualified with a schema other than the configured one.
 * Relations (RangeVar, whether bare or wrapped) count wherever they appear, also inside a view's query or a REFERENCES clause; type and function names may also name pg_catalog,
 * because the parser itself qualifies built-ins that way (`int` arrives as pg_catalog.int4).
 */
export function findForeignSchema(node: unknown, ctx: RuleContext): TreeFacts {
  const facts: TreeFacts = {};
  const visit = (value: unknown, key: string | undefined): void => {
    if (Array.isArray(value)) {
      for (const item of value) visit(item, key);
      return;
    }
    if (value === null || typeof value !== 'object' || facts.foreignSchema) return;
    const obj = value as Record<string, unknown>;
    // A_Const holds literals: nothing below it is a name.
    if (key === 'A_Const') return;
    if (typeof obj.relname === 'string') checkRelation(obj, facts, ctx);
    if (Array.isArray(obj.names) && 'typemod' in obj) checkQualified(stringList(obj.names), facts, ctx);
    if (Array.isArray(obj.funcname)) checkQualified(stringList(obj.funcname), facts, ctx);
    for (const [k, v] of Object.entries(obj)) if (typeof v === 'object') visit(v, k);
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
