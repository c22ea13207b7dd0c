import { FORGE_LEGACY_NAMES, FORGE_TABLE_NAMES } from '../contract/forge-tables';
import { isAllowedFunction, isAllowedOperator, isRefusedBuiltin, refusalReason } from './builtins';
import type { RefusalReason } from './builtins';
import { isAgentName, showIdent, showQualified } from './names';
import type { RuleContext, Verdict } from './verdict';
import { reject } from './verdict';
import { findInTree, type TreeNode } from './walk';

/** What a walk over one statement's parse tree found: the first rule it breaks, if any. */
export interface TreeFacts {
  problem?: Verdict;
}

/**
 * How deep a parse tree may nest before the judge gives up on it. PostgreSQL's own parser (and V8's stack) stop
 * somewhere past this; a real migration's deepest expression is a few dozen levels.
 */
const MAX_TREE_DEPTH = 1_000;

/** Table sampling methods built into PostgreSQL (others come from extensions and run their own code). */
const SAMPLING_METHODS = new Set(['system', 'bernoulli']);

/** A_Expr kinds whose `name` is an operator (BETWEEN and friends name a keyword instead). */
const OPERATOR_KINDS = new Set([
  'AEXPR_OP',
  'AEXPR_OP_ANY',
  'AEXPR_OP_ALL',
  'AEXPR_DISTINCT',
  'AEXPR_NOT_DISTINCT',
  'AEXPR_NULLIF',
  'AEXPR_IN',
  'AEXPR_LIKE',
  'AEXPR_ILIKE',
  'AEXPR_SIMILAR',
]);

/**
 * Walks a statement's whole parse tree (every expression position: DEFAULT, CHECK, GENERATED, USING, index
 * expressions and predicates, view bodies, exclusion constraints, partition keys) for the rules that hold wherever a
 * name or a call appears (SCHEMA_POLICY.md "Names", "Expressions", "Forge's own objects", "Limits"):
 * - relations, types and functions in a schema other than the configured one (types and functions may also be
 *   `pg_catalog`'s, because the parser itself qualifies built-ins that way: `int` arrives as pg_catalog.int4);
 * - system catalogs and Forge's own tables, read or written;
 * - functions outside the allowlist of side-effect-free built-ins (also called as `row.function`), nextval on a
 *   sequence outside the agent namespace; operators, operator classes and collations outside pg_catalog;
 * - a tree too deep to judge.
 * The walk is iterative, so a deep tree is a verdict, never a stack overflow.
 */
export function checkTree(root: unknown, ctx: RuleContext): TreeFacts {
  const problem = findInTree(root, (node, key) => checkNode(node, key, ctx), { maxDepth: MAX_TREE_DEPTH, tooDeep });
  return problem ? { problem } : {};
}

/** The rules of one node, by what the node is (`key` is the node's type name when it is wrapped, e.g. FuncCall). */
function checkNode(obj: TreeNode, key: string | undefined, ctx: RuleContext): Verdict | undefined {
  if (typeof obj.relname === 'string') return checkRelation(obj, ctx);
  if (key === 'String' && FORGE_LEGACY_NAMES.has(String(obj.sval))) return forgeTable(showIdent(String(obj.sval)));
  if (typeof obj.indexspace === 'string' || typeof obj.tablespacename === 'string') return tablespace();
  if (Array.isArray(obj.names) && 'typemod' in obj) return checkTypeName(stringList(obj.names), ctx);
  switch (key) {
    case 'FuncCall':
      return checkFuncCall(obj, ctx);
    case 'A_Expr':
      return OPERATOR_KINDS.has(String(obj.kind)) ? checkOperator(stringList(obj.name as unknown[]), ctx) : undefined;
    case 'SortBy':
      return Array.isArray(obj.useOp) ? checkOperator(stringList(obj.useOp), ctx) : undefined;
    case 'CollateClause':
    case 'collClause': // a column definition's COLLATE, not wrapped in its node name
      return checkBuiltinName('Collation', stringList(obj.collname as unknown[]), ctx);
    case 'A_Indirection':
      return checkFunctionalNotation(obj.indirection as unknown[]);
    case 'DefElem':
      return obj.defname === 'sequence_name' ? checkSequenceName(stringList(((obj.arg as TreeNode)?.List as TreeNode)?.items as unknown[]), ctx) : undefined;
    case 'InsertStmt':
    case 'UpdateStmt':
    case 'DeleteStmt':
    case 'MergeStmt':
      return reject(
        'dml-forbidden',
        'A data-modifying statement inside another one (a WITH ... DELETE/UPDATE/INSERT/MERGE in a view or query) ' +
          'changes data, which a migration may not do, now or when the view is read. Remove it.',
      );
    case 'IndexElem':
      return (
        checkBuiltinName('Operator class', stringList((obj.opclass as unknown[]) ?? []), ctx) ??
        checkBuiltinName('Collation', stringList((obj.collation as unknown[]) ?? []), ctx)
      );
    case 'Constraint':
      return checkExclusions(obj, ctx);
    case 'ColumnRef':
      return checkFunctionalNotation(obj.fields as unknown[], 2);
    case 'RangeTableSample':
      return checkSampling(stringList((obj.method as unknown[]) ?? []));
  }
  return undefined;
}

/**
 * A type name: in the configured schema or pg_catalog; and a table's row type is a reference to that table
 * (SCHEMA_POLICY.md "Round three"), so a column of type `events` or `forge_migrations[]` is a use of Forge's table: it
 * would block Forge's own ALTER TABLE ... ALTER COLUMN TYPE and DROP TABLE on it.
 */
function checkTypeName(names: string[], ctx: RuleContext): Verdict | undefined {
  const foreign = checkQualified(names, ctx, [ctx.schema, 'pg_catalog']);
  if (foreign) return foreign;
  const name = names[names.length - 1] ?? '';
  const inSchema = names.length === 1 || names[0] === ctx.schema;
  if (inSchema && (FORGE_TABLE_NAMES.has(name) || FORGE_LEGACY_NAMES.has(name))) return forgeTable(showQualified(names));
  return undefined;
}

function checkRelation(rel: TreeNode, ctx: RuleContext): Verdict | undefined {
  const schema = typeof rel.schemaname === 'string' ? rel.schemaname : undefined;
  const name = String(rel.relname);
  const parts = [rel.catalogname, schema, name].filter((p): p is string => typeof p === 'string');
  // pg_catalog is searched before every schema, so an unqualified pg_* name is the catalog's.
  if (schema === 'pg_catalog' || schema === 'information_schema' || (schema === undefined && name.startsWith('pg_'))) {
    return reject(
      'system-catalog',
      `${showQualified(parts)} is a system catalog: a migration may not read it (in a view), index it, reference ` +
        'it or change it. Read only your agent_ tables and the application tables of the configured schema.',
    );
  }
  if (rel.catalogname !== undefined || (schema !== undefined && schema !== ctx.schema)) {
    return foreignSchema(showQualified(parts), ctx);
  }
  if (FORGE_TABLE_NAMES.has(name) || FORGE_LEGACY_NAMES.has(name)) return forgeTable(showQualified(parts));
  return undefined;
}

/** Refuses any use of a table Forge keeps for itself (SCHEMA_POLICY.md "Forge's own objects"). */
export function forgeTable(shown: string): Verdict {
  return reject(
    'forge-table',
    `${shown} is one of Forge's own tables (or a name Forge used for one), not the application's nor the agent's: ` +
      'no migration may read, reference, index, create or change it. Keep your data in agent_ tables of other names.',
  );
}

function checkFuncCall(call: TreeNode, ctx: RuleContext): Verdict | undefined {
  const names = stringList(call.funcname as unknown[]);
  const name = names[names.length - 1] ?? '';
  const shown = showQualified(names);
  if (names.length > 2) return foreignSchema(shown, ctx);
  if (names.length === 2 && names[0] !== 'pg_catalog') {
    if (names[0] !== ctx.schema) return foreignSchema(shown, ctx);
    return functionRefused(shown, 'unknown');
  }
  if (name === 'nextval') return checkNextval(call.args as unknown[] | undefined, ctx);
  if (!isAllowedFunction(name)) return functionRefused(shown, refusalReason(name));
  return undefined;
}

/** nextval only on a sequence of the agent namespace, named by a literal (a computed name could be any sequence). */
function checkNextval(args: unknown[] | undefined, ctx: RuleContext): Verdict | undefined {
  const literal = args?.length === 1 ? sequenceLiteral(args[0]) : undefined;
  const parts = literal === undefined ? undefined : parseQualifiedName(literal);
  const ok =
    parts !== undefined && parts.length >= 1 && parts.length <= 2 && isAgentName(parts[parts.length - 1]) && (parts.length === 1 || parts[0] === ctx.schema);
  if (ok) return undefined;
  return reject(
    'nextval-foreign-sequence',
    `nextval(${literal === undefined ? '...' : `'${literal}'`}) would advance ` +
      `${literal === undefined ? 'a sequence named by an expression' : 'a sequence outside the agent namespace'}: a ` +
      "migration may call nextval only on its own sequence, named by a literal: nextval('agent_...').",
  );
}

/** The text of `'name'` or `'name'::regclass`, the forms nextval's argument takes. */
function sequenceLiteral(arg: unknown): string | undefined {
  const node = arg as TreeNode;
  const cast = node.TypeCast as TreeNode | undefined;
  if (cast) {
    const target = stringList(((cast.typeName as TreeNode | undefined)?.names as unknown[]) ?? []);
    if (target[target.length - 1] !== 'regclass' || (target.length === 2 && target[0] !== 'pg_catalog') || target.length > 2) {
      return undefined;
    }
    return sequenceLiteral(cast.arg);
  }
  const value = (node.A_Const as TreeNode | undefined)?.sval as TreeNode | undefined;
  return typeof value?.sval === 'string' ? value.sval : undefined;
}

/**
 * A name as PostgreSQL reads it from text (regclass input, `nextval('...')`): dot-separated parts, quoted parts kept
 * as written, unquoted parts folded to lower case. Undefined for text that is not a plain qualified name.
 */
function parseQualifiedName(text: string): string[] | undefined {
  const parts: string[] = [];
  let i = 0;
  for (;;) {
    let part = '';
    if (text[i] === '"') {
      for (i++; ; i++) {
        if (i >= text.length) return undefined;
        if (text[i] === '"') {
          if (text[i + 1] !== '"') break;
          i++;
        }
        part += text[i];
      }
      i++;
    } else {
      while (i < text.length && text[i] !== '.') part += text[i++];
      if (!/^[A-Za-z_][A-Za-z0-9_$]*$/.test(part)) return undefined;
      part = part.toLowerCase();
    }
    if (part === '') return undefined;
    parts.push(part);
    if (i === text.length) return parts;
    if (text[i] !== '.') return undefined;
    i++;
  }
}

const REASONS: Record<RefusalReason, string> = {
  volatile: 'PostgreSQL marks it volatile (it can change something or answer differently on every row)',
  'parallel-unsafe': 'PostgreSQL marks it parallel unsafe (it changes state)',
  'parallel-restricted': 'PostgreSQL marks it parallel restricted (it reads session or server state)',
  'deny-list':
    'it acts on something outside the migration (settings, sequences, sessions, files, locks, ' + 'notifications, large objects, or SQL text it runs)',
  reads: 'it reads the catalogs, settings, roles, files or other sessions',
  unknown: 'it is not one of the PostgreSQL built-ins the policy knows',
};

function functionRefused(shown: string, reason: RefusalReason): Verdict {
  if (reason === 'reads') {
    return reject(
      'catalog-reader',
      `Function ${shown} reads the catalogs, the server's settings, the roles, its files or other sessions, whatever ` +
        'PostgreSQL says of its volatility: no expression of a migration may call it (in a view it would hand ' +
        'them to whoever reads the view, in a DEFAULT to every row). Compute from the row and literals only; ' +
        'what a tool needs to know of the database, ask an operator for.',
    );
  }
  return reject(
    'function-not-allowed',
    `Function ${shown} is not allowed in a migration's expressions: ${REASONS[reason]}. PostgreSQL evaluates ` +
      'DEFAULT, CHECK, USING, index and view expressions for existing and future rows, so they may call only ' +
      'side-effect-free built-ins (lower, coalesce, now, date_trunc, jsonb_build_object, gen_random_uuid, ...) and ' +
      "nextval('agent_...'). Compute anything else in a tool or the application.",
  );
}

function checkOperator(names: string[], ctx: RuleContext): Verdict | undefined {
  const symbol = names[names.length - 1] ?? '';
  const foreign = checkBuiltinName('Operator', names, ctx, (n) => `OPERATOR(${n.join('.')})`);
  if (foreign) return foreign;
  if (isAllowedOperator(symbol)) return undefined;
  return reject(
    'operator-not-allowed',
    `Operator ${names.join('.')} is not a side-effect-free PostgreSQL built-in operator. Use the built-in ` + 'operators (=, <, +, ||, ->>, @>, ~~, ...) only.',
  );
}

/** Operators, operator classes and collations: unqualified or pg_catalog's, never from another schema. */
function checkBuiltinName(what: string, names: string[], ctx: RuleContext, show: (names: string[]) => string = showQualified): Verdict | undefined {
  if (names.length <= 1 || (names.length === 2 && names[0] === 'pg_catalog')) return undefined;
  return reject(
    'foreign-schema',
    `${what} ${show(names)} is taken from schema ${showIdent(names[names.length - 2])}: a migration may ` +
      `use only PostgreSQL's own ${what.toLowerCase()}s, unqualified or in pg_catalog (not even "${ctx.schema}", ` +
      'where the application may keep its own).',
  );
}

/** `EXCLUDE USING gist (col WITH &&)`: each pair is an index element and the operator that compares. */
function checkExclusions(constraint: TreeNode, ctx: RuleContext): Verdict | undefined {
  for (const pair of (constraint.exclusions as unknown[] | undefined) ?? []) {
    const items = ((pair as TreeNode).List as TreeNode | undefined)?.items as unknown[] | undefined;
    const op = ((items?.[1] as TreeNode | undefined)?.List as TreeNode | undefined)?.items as unknown[] | undefined;
    const problem = op ? checkOperator(stringList(op), ctx) : undefined;
    if (problem) return problem;
  }
  return undefined;
}

/**
 * `t.setval` and `(expr).pg_sleep` call the function with t or expr as argument when there is no such column:
 * PostgreSQL's functional notation is a call too. Every name selected from a row is checked against the built-ins
 * the allowlist refuses (a column named like one of them is refused too: rename it).
 */
function checkFunctionalNotation(items: unknown[] | undefined, minimum = 1): Verdict | undefined {
  const fields = stringList(items);
  if (fields.length < minimum) return undefined;
  const refused = fields.slice(minimum - 1).find(isRefusedBuiltin);
  if (refused === undefined) return undefined;
  return functionRefused(`${showIdent(refused)} (written .${refused}, which PostgreSQL reads as a call)`, refusalReason(refused));
}

/** `GENERATED ... AS IDENTITY (SEQUENCE NAME ...)` creates that sequence: it must be the agent's. */
function checkSequenceName(names: string[], ctx: RuleContext): Verdict | undefined {
  const name = names[names.length - 1] ?? '';
  if (names.length > 2 || (names.length === 2 && names[0] !== ctx.schema)) return foreignSchema(showQualified(names), ctx);
  if (isAgentName(name)) return undefined;
  return reject(
    'agent-namespace',
    `SEQUENCE NAME ${showQualified(names)} would create a sequence outside the agent namespace. Name it ` +
      `agent_... or leave SEQUENCE NAME out (PostgreSQL then names it after the agent_ table).`,
  );
}

function tablespace(): Verdict {
  return reject(
    'create-table-option-forbidden',
    "TABLESPACE / USING INDEX TABLESPACE places data outside the database's default storage. Leave the tablespace out.",
  );
}

function checkSampling(method: string[]): Verdict | undefined {
  const name = method[method.length - 1] ?? '';
  if (SAMPLING_METHODS.has(name) && (method.length === 1 || (method.length === 2 && method[0] === 'pg_catalog'))) return undefined;
  return reject('function-not-allowed', `TABLESAMPLE ${showQualified(method)} is not a built-in sampling method; use SYSTEM or BERNOULLI.`);
}

function checkQualified(names: string[], ctx: RuleContext, allowed: string[]): Verdict | undefined {
  if (names.length < 2) return undefined;
  const qualifier = names[names.length - 2];
  if (names.length > 2 || !allowed.includes(qualifier)) return foreignSchema(showQualified(names), ctx);
  return undefined;
}

/** Refuses a name qualified with a schema other than the configured one. */
export function foreignSchema(qualified: string, ctx: RuleContext): Verdict {
  return reject(
    'foreign-schema',
    `${qualified} names a schema other than "${ctx.schema}": a migration may only touch schema "${ctx.schema}". ` +
      `Drop the qualifier or write ${ctx.schema}.<name>.`,
  );
}

/** The verdict on a statement nested too deeply to judge, whether the parser or this walk ran out first. */
export function tooDeep(): Verdict {
  return reject(
    'expression-too-deep',
    `This statement nests more than about ${MAX_TREE_DEPTH} levels deep, too deep to judge. Write the expression ` +
      'flatter (fewer nested parentheses, calls or chained operators), or split the work.',
  );
}

/** The strings of a name list (`[{String: {sval}}, ...]`); other items are left out. */
function stringList(list: unknown[] | undefined): string[] {
  const out: string[] = [];
  for (const item of list ?? []) {
    const s = (item as { String?: { sval?: unknown } }).String?.sval;
    if (typeof s === 'string') out.push(s);
  }
  return out;
}
