import type {
  CompositeTypeStmt,
  CreateEnumStmt,
  CreateRangeStmt,
  CreateSeqStmt,
  CreateStmt,
  IndexStmt,
  RangeVar,
  TableLikeClause,
  ViewStmt,
} from 'libpg-query';
import { checkColumnDef, checkConstraintName } from './column-rules';
import { coreIndexExpression, nonTotalParts } from './core-expressions';
import { refusals } from './forbidden-kinds';
import { isAllowedFunction } from './builtins';
import { isAgentName, namesOf, namesOfListNode, showIdent, showQualified, suggestAgentName } from './names';
import { foreignSchema } from './tree-rules';
import { findInTree } from './walk';
import type { RuleContext, Verdict } from './verdict';
import { accept, reject } from './verdict';

/** Refuses creating `what` named `name` outside the agent namespace, suggesting the name to use instead. */
function outsideNamespace(what: string, name: string): Verdict {
  return reject(
    'agent-namespace',
    `${what} ${showIdent(name)} is outside the agent namespace: every object a migration creates must be named ` +
      `agent_... Name it ${suggestAgentName(name)} (unquoted names fold to lower case; a quoted "AGENT_..." ` +
      'does not count).',
  );
}

function temporary(what: string): Verdict {
  return reject('temporary-object', `A temporary ${what} disappears with the session that applies the migration. Create a permanent agent_ ${what}.`);
}

/** CREATE TABLE: agent namespace only, plain tables (no INHERITS, PARTITION OF, OF type, tablespace). */
export function checkCreateTable(s: CreateStmt): Verdict {
  const rel = s.relation ?? {};
  const name = rel.relname ?? '';
  if (!isAgentName(name)) return outsideNamespace('Table', name);
  if (rel.relpersistence === 't') return temporary('table');
  // A partition or child of an agent table changes only the agent's table; of a core table, the application's queries.
  const parents = (s.inhRelations ?? []).map((n) => ('RangeVar' in n ? n.RangeVar.relname : undefined));
  if (parents.some((p) => !isAgentName(p)) || (s.partbound !== undefined && parents.length === 0)) {
    return reject(
      'create-table-option-forbidden',
      `INHERITS / PARTITION OF makes ${showIdent(name)} part of a table outside the agent namespace, so queries on ` +
        'that table change. Partition or inherit from your own agent_ tables only; for an application table, ' +
        'create a standalone table and reference it with REFERENCES instead.',
    );
  }
  if (s.ofTypename !== undefined || s.tablespacename !== undefined || s.accessMethod !== undefined) {
    return reject(
      'create-table-option-forbidden',
      `CREATE TABLE ${showIdent(name)} OF type / TABLESPACE / USING is not allowed; declare the columns in a plain CREATE TABLE.`,
    );
  }
  const display = showIdent(name);
  for (const elt of s.tableElts ?? []) {
    const problem =
      'ColumnDef' in elt
        ? checkColumnDef(elt.ColumnDef, display, false)
        : 'Constraint' in elt
          ? checkConstraintName(elt.Constraint, display)
          : 'TableLikeClause' in elt
            ? checkLike(elt.TableLikeClause)
            : undefined;
    if (problem) return problem;
  }
  return accept('create-agent-table', `Creates agent table ${display}.`);
}

/** What `LIKE core_table INCLUDING ...` may copy: what carries no expression of the application's. */
const LIKE_OPTIONS_FROM_CORE = {
  COMMENTS: 1 << 0,
  COMPRESSION: 1 << 1,
  STATISTICS: 1 << 7,
  STORAGE: 1 << 8,
};
const LIKE_SAFE_MASK = Object.values(LIKE_OPTIONS_FROM_CORE).reduce((a, b) => a | b, 0);

/**
 * LIKE copies a table's columns; from a core table, its defaults, generated columns, identities, constraints and
 * indexes would bring the application's expressions along (`nextval('orders_id_seq')` advancing the application's
 * sequence on every agent insert, the application's functions in CHECKs), which the policy never judged.
 */
function checkLike(like: TableLikeClause): Verdict | undefined {
  if (isAgentName(like.relation?.relname)) return undefined;
  if (((like.options ?? 0) & ~LIKE_SAFE_MASK) === 0) return undefined;
  return reject(
    'like-copies-expressions',
    `LIKE ${showRelation(like.relation)} INCLUDING DEFAULTS / GENERATED / IDENTITY / CONSTRAINTS / INDEXES (or ALL) ` +
      "would copy the application's own expressions (its sequences' nextval, its functions) into an agent table. " +
      `Use plain LIKE ${showRelation(like.relation)} (columns and types only), INCLUDING COMMENTS / STORAGE at most, ` +
      'and declare defaults and constraints of your own.',
  );
}

/** CREATE [UNIQUE] INDEX: named agent_..., on agent or core tables, never CONCURRENTLY. */
export function checkCreateIndex(s: IndexStmt): Verdict {
  const table = showRelation(s.relation);
  if (s.concurrent) return refusals.nonTransactional('CREATE INDEX CONCURRENTLY');
  if (s.idxname === undefined) {
    return reject(
      'index-unnamed',
      `An unnamed index on ${table} would be named by PostgreSQL after ${table}, outside the agent namespace. ` +
        `Name it: CREATE INDEX agent_${(s.relation?.relname ?? 'table').toLowerCase()}_..._idx ON ${table} (...).`,
    );
  }
  if (!isAgentName(s.idxname)) return outsideNamespace('Index', s.idxname);
  if (s.tableSpace !== undefined) {
    return reject('create-index-option-forbidden', 'CREATE INDEX ... TABLESPACE is not allowed; leave the tablespace out.');
  }
  const agentTable = isAgentName(s.relation?.relname);
  if (!agentTable && (s.unique || s.primary)) {
    return reject(
      'core-unique-index',
      `A unique index on core table ${table} would make the application's own writes fail whenever they repeat a ` +
        `value it indexes. Create a plain index (CREATE INDEX ${showIdent(s.idxname)} ON ${table} (...)), or keep ` +
        'the values that must be unique in an agent_ table with its own UNIQUE constraint.',
    );
  }
  if (!agentTable && (s.indexParams ?? []).some((p) => 'IndexElem' in p && p.IndexElem.expr && !readsAColumn(p.IndexElem.expr))) {
    return reject(
      'core-index-constant',
      `An index expression on core table ${table} that reads no column is the same for every row: it indexes ` +
        "nothing and only slows the application's writes. Index a column or an expression of one.",
    );
  }
  if (!agentTable) {
    const relname = s.relation?.relname ?? '';
    for (const param of s.indexParams ?? []) {
      const what = 'IndexElem' in param && param.IndexElem.expr ? nonTotalParts(param.IndexElem.expr, relname) : undefined;
      if (what) return coreIndexExpression(what, 'expression', s.idxname, table);
    }
    const what = s.whereClause ? nonTotalParts(s.whereClause, relname) : undefined;
    if (what) return coreIndexExpression(what, 'predicate', s.idxname, table);
  }
  const where = agentTable ? 'agent table' : 'core table';
  return accept('create-agent-index', `Creates index ${showIdent(s.idxname)} on ${where} ${table}.`);
}

/** CREATE [OR REPLACE] VIEW: agent namespace only. */
export function checkCreateView(s: ViewStmt): Verdict {
  const name = s.view?.relname ?? '';
  if (!isAgentName(name)) return outsideNamespace('View', name);
  if (s.view?.relpersistence === 't') return temporary('view');
  return accept(s.replace ? 'replace-agent-view' : 'create-agent-view', `Creates view ${showIdent(name)}.`);
}

/** CREATE SEQUENCE: agent namespace only, owned by nothing or by a column of an agent table. */
export function checkCreateSequence(s: CreateSeqStmt, ctx: RuleContext): Verdict {
  const name = s.sequence?.relname ?? '';
  if (!isAgentName(name)) return outsideNamespace('Sequence', name);
  if (s.sequence?.relpersistence === 't') return temporary('sequence');
  for (const option of s.options ?? []) {
    const def = 'DefElem' in option ? option.DefElem : undefined;
    if (def?.defname !== 'owned_by') continue;
    const owner = namesOfListNode(def.arg);
    if (owner.length === 1 && owner[0] === 'none') continue;
    const foreign = qualifierProblem(owner, 2, ctx);
    if (foreign) return foreign;
    if (!isAgentName(owner[owner.length - 2])) {
      return reject(
        'sequence-owned-by-core',
        `OWNED BY ${showQualified(owner)} ties sequence ${showIdent(name)} to a core column: dropping or changing ` +
          "the application's column would then depend on the agent's sequence. Own it by a column of an agent_ " +
          'table, or leave OWNED BY out.',
      );
    }
  }
  return accept('create-agent-sequence', `Creates sequence ${showIdent(name)}.`);
}

/** CREATE TYPE ... AS (...), AS ENUM, AS RANGE: agent namespace only. */
export function checkCreateType(s: CompositeTypeStmt | CreateEnumStmt | CreateRangeStmt, ctx: RuleContext): Verdict {
  const names =
    'typevar' in s
      ? [s.typevar?.schemaname, s.typevar?.relname ?? ''].filter((n): n is string => n !== undefined)
      : namesOf((s as CreateEnumStmt | CreateRangeStmt).typeName);
  const name = names[names.length - 1] ?? '';
  const foreign = qualifierProblem(names, 1, ctx);
  if (foreign) return foreign;
  if (!isAgentName(name)) return outsideNamespace('Type', name);
  if ('params' in s) {
    const problem = checkRangeParams(s, ctx);
    if (problem) return problem;
  }
  return accept('create-agent-type', `Creates type ${showIdent(name)}.`);
}

/**
 * Refuses a qualified name list (`[schema, ]...name`) whose schema part is not the configured schema; `depth` is the
 * number of trailing parts that are not schema (1 for `schema.table`, 2 for `schema.table.column`).
 */
export function qualifierProblem(names: string[], depth: number, ctx: RuleContext): Verdict | undefined {
  if (names.length <= depth) return undefined;
  const qualifier = names[names.length - depth - 1];
  if (names.length > depth + 1 || qualifier !== ctx.schema) return foreignSchema(showQualified(names), ctx);
  return undefined;
}

/** How a relation is shown in messages: schema-qualified when it was written so. */
export function showRelation(rel: RangeVar | undefined): string {
  return showQualified([rel?.catalogname, rel?.schemaname, rel?.relname ?? '?']);
}

/**
 * CREATE TYPE ... AS RANGE names more than the type: a multirange type (created under that name), an operator class,
 * a collation and functions PostgreSQL calls later. Each must be the agent's or PostgreSQL's own.
 */
function checkRangeParams(s: CreateRangeStmt, ctx: RuleContext): Verdict | undefined {
  for (const param of s.params ?? []) {
    const def = 'DefElem' in param ? param.DefElem : undefined;
    if (!def) continue;
    const names = namesOfListNode(def.arg);
    const shown = showQualified(names);
    switch (def.defname) {
      case 'subtype':
        break; // a type name: the tree walk checks its schema
      case 'multirange_type_name': {
        const foreign = qualifierProblem(names, 1, ctx);
        if (foreign) return foreign;
        const multirange = names[names.length - 1] ?? '';
        if (!isAgentName(multirange)) {
          return reject(
            'range-option-forbidden',
            `multirange_type_name = ${showIdent(multirange)} would create a type outside the agent namespace. Name ` +
              `it ${suggestAgentName(multirange)}, or leave it out (PostgreSQL then names it after the agent_ range).`,
          );
        }
        break;
      }
      case 'subtype_opclass':
      case 'collation':
      case 'subtype_diff':
        if (names.length > 2 || (names.length === 2 && names[0] !== 'pg_catalog')) {
          return reject(
            'range-option-forbidden',
            `${def.defname} = ${shown} is taken from schema ${showIdent(names[names.length - 2])}; a range type may ` +
              "use only PostgreSQL's own operator classes, collations and functions (unqualified or pg_catalog).",
          );
        }
        if (def.defname === 'subtype_diff' && !isAllowedFunction(names[names.length - 1] ?? '')) {
          return reject(
            'range-option-forbidden',
            `subtype_diff = ${shown} is not a side-effect-free built-in function. Use PostgreSQL's own difference ` +
              'function for the subtype (e.g. float8mi, int4range_subdiff) or leave subtype_diff out.',
          );
        }
        break;
      default:
        return reject(
          'range-option-forbidden',
          `CREATE TYPE ... AS RANGE (${def.defname ?? '?'} = ${shown || '...'}) is not allowed: a range type may set subtype, ` +
            'subtype_opclass, collation, subtype_diff and multirange_type_name (agent_...) only.',
        );
    }
  }
  return undefined;
}

/** Whether an expression reads a column anywhere (a constant one never does). */
function readsAColumn(expr: unknown): boolean {
  return findInTree(expr, (_node, key) => (key === 'ColumnRef' ? true : undefined)) === true;
}
