import type { Node } from 'libpg-query';
import { namesOf, showIdent } from './names';
import { TOTAL_DATE_TRUNC_UNITS, TOTAL_OPERATORS, totalFunction, totalFunctionNames } from './total-functions';
import type { Verdict } from './verdict';
import { reject } from './verdict';
import { findInTree, type TreeNode } from './walk';

/**
 * What the agent may attach to a core table (SCHEMA_POLICY.md "Round three"): everything there runs later, on the
 * application's own writes and under the application's role, so it may not raise, be slow, exhaust anything or read
 * anything but the row. Index expressions and predicates, and CHECKs on agent columns, are built only of columns,
 * literals, comparisons, boolean logic and the total functions of total-functions.ts; a DEFAULT is a literal or a
 * niladic time value.
 */

/** Expression node kinds that cannot raise by themselves (their operands are checked too). */
const STRUCTURAL = new Set([
  'ColumnRef',
  'A_Const',
  'BoolExpr',
  'NullTest',
  'BooleanTest',
  'CoalesceExpr',
  'MinMaxExpr',
  'CaseExpr',
  'CaseWhen',
  'List',
  'String',
  'CollateClause',
]);

/** A_Expr kinds that only compare (with `=` or the operator they name, checked against TOTAL_OPERATORS). */
const COMPARING_KINDS = new Set([
  'AEXPR_OP',
  'AEXPR_DISTINCT',
  'AEXPR_NOT_DISTINCT',
  'AEXPR_NULLIF',
  'AEXPR_IN',
  'AEXPR_BETWEEN',
  'AEXPR_NOT_BETWEEN',
  'AEXPR_BETWEEN_SYM',
  'AEXPR_NOT_BETWEEN_SYM',
]);

/** Readable names of node kinds the list refuses, for messages. */
const SHOWN_KINDS: Partial<Record<string, string>> = {
  SubLink: 'a subquery',
  RowExpr: 'a row constructor',
  A_ArrayExpr: 'an ARRAY constructor',
  A_Indirection: 'a subscript or field selection',
  SQLValueFunction: 'a session or clock value (CURRENT_USER, CURRENT_TIMESTAMP, ...)',
  XmlExpr: 'an XML expression',
  NamedArgExpr: 'a named argument',
  ParamRef: 'a parameter',
  GroupingFunc: 'GROUPING',
};

/**
 * What in `expr` could raise, be slow or read more than the row, described for a message (`the operator /`,
 * `the function sqrt(...)`, `a cast (::) of status`): at most three of them, outermost first, or undefined when the
 * whole expression is total. `table` is the core table's own name: a column reference with that name is the whole row.
 */
export function nonTotalParts(expr: unknown, table: string): string | undefined {
  const found: string[] = [];
  findInTree(expr, (node, key) => {
    const problem = nodeProblem(node, key, table);
    if (problem !== undefined && !found.includes(problem)) found.push(problem);
    return found.length >= 3 ? true : undefined;
  });
  return found.length > 0 ? found.join(', ') : undefined;
}

function nodeProblem(node: TreeNode, key: string | undefined, table: string): string | undefined {
  if (key === undefined || !/^[A-Z]/.test(key)) return undefined; // a field of a node, not a node
  if (key === 'ColumnRef') return columnProblem(node, table);
  if (key === 'TypeCast') return isStringLiteral(node.arg) ? undefined : `a cast (::) of ${castOperand(node.arg)}`;
  if (key === 'A_Expr') return operatorProblem(node);
  if (key === 'FuncCall') return callProblem(node);
  if (STRUCTURAL.has(key)) return undefined;
  return SHOWN_KINDS[key] ?? `a ${key}`;
}

function columnProblem(node: TreeNode, table: string): string | undefined {
  const all = (node.fields as Node[] | undefined) ?? [];
  const fields = namesOf(all);
  if (fields.length !== 1 || all.length !== 1) return `the reference ${fields.join('.') || '*'} (name a column of the table, unqualified)`;
  if (fields[0] === table) return `the whole row ${showIdent(table)}`;
  return undefined;
}

function operatorProblem(node: TreeNode): string | undefined {
  const kind = String(node.kind);
  const names = namesOf(node.name as Node[] | undefined);
  const symbol = names[names.length - 1] ?? '?';
  if (!COMPARING_KINDS.has(kind)) return `the operator ${kindWord(kind, symbol)}`;
  if (node.lexpr === undefined) return `the prefix operator ${symbol}`;
  if (kind.includes('BETWEEN')) return undefined; // its name is the keyword; it compares with < and >
  const rule = TOTAL_OPERATORS[symbol];
  if (!rule) return `the operator ${symbol}`;
  if (rule.literalRight && !isLiteral(node.rexpr)) return `the operator ${symbol} with a computed right operand (write a literal key)`;
  return undefined;
}

function kindWord(kind: string, symbol: string): string {
  switch (kind) {
    case 'AEXPR_LIKE':
      return 'LIKE';
    case 'AEXPR_ILIKE':
      return 'ILIKE';
    case 'AEXPR_SIMILAR':
      return 'SIMILAR TO';
    case 'AEXPR_OP_ANY':
      return `${symbol} ANY`;
    case 'AEXPR_OP_ALL':
      return `${symbol} ALL`;
    default:
      return symbol;
  }
}

function callProblem(node: TreeNode): string | undefined {
  const names = namesOf(node.funcname as Node[] | undefined);
  const name = names[names.length - 1] ?? '?';
  const args = (node.args as Node[] | undefined) ?? [];
  const shown = `${name}(...)`;
  if (node.agg_star || node.agg_distinct || node.func_variadic || node.over || node.agg_filter || node.agg_order) {
    return `${shown} as an aggregate, window or VARIADIC call`;
  }
  const entry = totalFunction(name, args.length);
  if (!entry) return `the function ${shown} with ${args.length} argument(s)`;
  for (let i = 0; i < entry.args.length; i++) {
    const spec = entry.args[i];
    if (spec.kind === 'textLiteral') {
      const value = stringLiteral(args[i]);
      if (value === undefined || !spec.values.includes(value)) {
        return `${shown} with argument ${i + 1} other than one of the literals ${spec.values.map((v) => `'${v}'`).join(', ')}`;
      }
    } else if (spec.kind === 'integerLiteral' && !isIntegerLiteral(args[i])) {
      return `${shown} with argument ${i + 1} other than an integer literal`;
    }
  }
  return undefined;
}

function castOperand(arg: unknown): string {
  const ref = (arg as TreeNode | undefined)?.ColumnRef as TreeNode | undefined;
  if (ref) return namesOf(ref.fields as Node[] | undefined).join('.') || 'a column';
  return 'an expression or a non-string literal';
}

/** `'text'` or NULL: what PostgreSQL turns into a value of the cast's type while it reads the statement. */
function isStringLiteral(arg: unknown): boolean {
  const c = (arg as TreeNode | undefined)?.A_Const as TreeNode | undefined;
  return c !== undefined && (c.isnull === true || c.sval !== undefined);
}

function stringLiteral(arg: unknown): string | undefined {
  const c = (arg as TreeNode | undefined)?.A_Const as TreeNode | undefined;
  const v = (c?.sval as TreeNode | undefined)?.sval;
  return typeof v === 'string' ? v : undefined;
}

function isIntegerLiteral(arg: unknown): boolean {
  const c = (arg as TreeNode | undefined)?.A_Const as TreeNode | undefined;
  return c?.ival !== undefined;
}

/** A constant: a literal, or a string literal cast to a type. */
function isLiteral(expr: unknown): boolean {
  const node = expr as TreeNode | undefined;
  if (!node) return false;
  if (node.A_Const) return true;
  const cast = node.TypeCast as TreeNode | undefined;
  return cast !== undefined && isStringLiteral(cast.arg);
}

/** SQLValueFunction operations that are the clock (the rest, CURRENT_USER, CURRENT_SCHEMA, ..., read the session). */
const TIME_VALUE_OPS = new Set([
  'SVFOP_CURRENT_DATE',
  'SVFOP_CURRENT_TIME',
  'SVFOP_CURRENT_TIME_N',
  'SVFOP_CURRENT_TIMESTAMP',
  'SVFOP_CURRENT_TIMESTAMP_N',
  'SVFOP_LOCALTIME',
  'SVFOP_LOCALTIME_N',
  'SVFOP_LOCALTIMESTAMP',
  'SVFOP_LOCALTIMESTAMP_N',
]);

/** Niladic functions of the transaction's or statement's time: stable, so a default of them never rewrites. */
const TIME_FUNCTIONS = new Set(['now', 'transaction_timestamp', 'statement_timestamp']);

/** Types a time value may be cast to in a core DEFAULT (such casts cannot fail). */
const TIME_TYPES = new Set(['date', 'time', 'timetz', 'timestamp', 'timestamptz']);

/** now(), CURRENT_TIMESTAMP, CURRENT_DATE, LOCALTIMESTAMP, ..., optionally cast to a date/time type. */
export function isTimeValue(expr: unknown): boolean {
  const node = expr as TreeNode | undefined;
  if (!node) return false;
  const svf = node.SQLValueFunction as TreeNode | undefined;
  if (svf) return TIME_VALUE_OPS.has(String(svf.op));
  const call = node.FuncCall as TreeNode | undefined;
  if (call) {
    const names = namesOf(call.funcname as Node[] | undefined);
    const qualifiedOk = names.length === 1 || (names.length === 2 && names[0] === 'pg_catalog');
    return qualifiedOk && TIME_FUNCTIONS.has(names[names.length - 1]) && ((call.args as unknown[] | undefined)?.length ?? 0) === 0;
  }
  const cast = node.TypeCast as TreeNode | undefined;
  if (cast) {
    const type = namesOf(((cast.typeName as TreeNode | undefined)?.names as Node[] | undefined) ?? []);
    return TIME_TYPES.has(type[type.length - 1] ?? '') && isTimeValue(cast.arg);
  }
  return false;
}

/** Functions whose value changes on every call: a DEFAULT of one makes ADD COLUMN rewrite the whole table. */
const VOLATILE_VALUES = new Set(['random', 'random_normal', 'gen_random_uuid', 'uuidv4', 'uuidv7', 'clock_timestamp', 'timeofday']);

/**
 * The DEFAULT of an agent column added to a core table: a literal (optionally cast to the column's type) or a
 * niladic time value, nothing else. The refusal names what the expression does and what to write instead.
 */
export function checkCoreDefault(expr: Node | undefined, column: string, table: string): Verdict | undefined {
  if (expr === undefined || isLiteral(expr) || isTimeValue(expr)) return undefined;
  const calls = callNames(expr);
  const alternatives =
    "A DEFAULT on a core table runs on every insert of the application's, under its role, so it may only be a " +
    "literal, cast to the column's type if you like (0, 'en', false, '{\"beta\":false}'::jsonb, '{}'::text[]), or a " +
    'niladic time value (now(), CURRENT_TIMESTAMP, CURRENT_DATE, LOCALTIMESTAMP). Write the literal; keep computed ' +
    `values in an agent_ side table keyed by the core row (CREATE TABLE agent_... (${table.toLowerCase()}_id ... ` +
    `PRIMARY KEY REFERENCES ${table}, ...)), filled by a tool.`;
  let what: string;
  if (calls.includes('nextval')) {
    what =
      "calls nextval(): an agent sequence behind a core column stops the application's inserts when it runs out " +
      "(MAXVALUE, AS smallint) and fails them all when the application's role has no USAGE on it";
  } else {
    const volatile = calls.find((c) => VOLATILE_VALUES.has(c));
    what = volatile
      ? `calls ${volatile}(), which is volatile: PostgreSQL would rewrite the whole table under an ACCESS EXCLUSIVE ` +
        "lock to fill it, blocking the application's reads and writes for as long as that takes"
      : `is an expression${calls.length > 0 ? ` (calling ${calls.map((c) => `${c}()`).join(', ')})` : ''}, which ` +
        "can raise, be slow or depend on the clock, the role or the session of the application's insert";
  }
  return reject('core-default', `The DEFAULT of core column ${table}.${column} ${what}. ${alternatives}`);
}

function callNames(expr: unknown): string[] {
  const out: string[] = [];
  findInTree(expr, (node, key) => {
    if (key === 'FuncCall') {
      const names = namesOf(node.funcname as Node[] | undefined);
      if (names.length > 0) out.push(names[names.length - 1]);
    }
    return undefined;
  });
  return out;
}

/** The refusal of an index on a core table whose expression or predicate is not total. */
export function coreIndexExpression(what: string, where: 'expression' | 'predicate', index: string, table: string): Verdict {
  return reject(
    'core-index-expression',
    `The ${where === 'expression' ? 'index expression' : 'WHERE predicate'} of ${showIdent(index)} on core table ` +
      `${table} uses ${what}. It runs on every insert and update of the application's, so on a core table it may ` +
      'use only columns, literals, comparisons (=, <>, <, <=, >, >=, IN, BETWEEN, IS [NOT] DISTINCT FROM), AND/OR/' +
      `NOT, IS [NOT] NULL, CASE, coalesce/nullif/greatest/least, ->/->> with a literal key and the total functions ` +
      `${totalFunctionNames()} (date_trunc with one of the units ${TOTAL_DATE_TRUNC_UNITS.join(', ')}). No ` +
      'division, no arithmetic, no casts of columns. Index the column itself, or keep the computed value in an ' +
      'agent_ side table keyed by the core row and index it there.',
  );
}
