import type { ColumnDef, Constraint, Node } from 'libpg-query';
import { isAllowedFunction, isImmutableFunction } from './builtins';
import { checkCoreDefault, isTimeValue, nonTotalParts } from './core-expressions';
import { totalFunctionNames } from './total-functions';
import { findInTree } from './walk';
import { isAgentName, namesOf, showIdent, showQualified, suggestAgentName } from './names';
import type { Verdict } from './verdict';
import { reject } from './verdict';

/** Types that make PostgreSQL create a sequence named `<table>_<column>_seq` behind the column. */
const SERIAL_TYPES = new Set(['serial', 'serial4', 'bigserial', 'serial8', 'smallserial', 'serial2']);

/** Constraint kinds an ADD COLUMN on a core table may carry (SCHEMA_POLICY.md: defaults, NOT NULL, CHECK, REFERENCES). */
const CORE_COLUMN_CONSTRAINTS = new Set([
  'CONSTR_NULL',
  'CONSTR_NOTNULL',
  'CONSTR_DEFAULT',
  'CONSTR_CHECK',
  'CONSTR_FOREIGN',
  'CONSTR_ATTR_DEFERRABLE',
  'CONSTR_ATTR_NOT_DEFERRABLE',
  'CONSTR_ATTR_DEFERRED',
  'CONSTR_ATTR_IMMEDIATE',
  'CONSTR_ATTR_ENFORCED',
  'CONSTR_ATTR_NOT_ENFORCED',
]);

/** The Constraint nodes of a list (column constraints or table elements). */
function constraintsOf(list: Node[] | undefined): Constraint[] {
  const out: Constraint[] = [];
  for (const item of list ?? []) if ('Constraint' in item) out.push(item.Constraint);
  return out;
}

/** Rejects a constraint that is given a name outside the agent namespace (unnamed ones are named by PostgreSQL). */
export function checkConstraintName(c: Constraint, where: string): Verdict | undefined {
  if (c.conname === undefined || isAgentName(c.conname)) return undefined;
  return reject(
    'agent-namespace',
    `Constraint ${showIdent(c.conname)} on ${where} is outside the agent namespace: every constraint a migration ` +
      `creates must be named agent_... (for example CONSTRAINT ${suggestAgentName(c.conname)}), or left unnamed.`,
  );
}

/**
 * Checks a column definition. On a core table only plain columns named agent_... pass (defaults, NOT NULL with a DEFAULT, CHECK,
 * REFERENCES): anything that would create an index or sequence named after the core table, rewrite it, or fail on a
 * table that has rows is refused with the way around it.
 */
export function checkColumnDef(
  col: ColumnDef,
  table: string,
  core: boolean,
  /** The columns this statement adds to the core table: all a CHECK there may read. */
  addedColumns: ReadonlySet<string> = new Set(col.colname === undefined ? [] : [col.colname]),
  /** Of those, the ones whose DEFAULT is a time value: a CHECK reading one could start failing on a date. */
  timeDefaulted: ReadonlySet<string> = new Set(col.colname !== undefined && hasTimeDefault(col) ? [col.colname] : []),
): Verdict | undefined {
  const constraints = constraintsOf(col.constraints);
  for (const c of constraints) {
    const named = checkConstraintName(c, table);
    if (named) return named;
  }
  if (!core) return undefined;
  const column = showIdent(col.colname ?? '?');
  // The column is the object this statement creates on someone else's table: it must be recognisably the agent's,
  // and cannot then collide with a column the application adds later.
  if (!isAgentName(col.colname)) {
    return reject(
      'agent-namespace',
      `Column ${column} would be added to core table ${table} outside the agent namespace: columns a migration ` +
        `adds to a core table must be named agent_... Name it ${suggestAgentName(col.colname ?? 'column')}.`,
    );
  }
  const typeNames = namesOf(col.typeName?.names);
  const typeName = typeNames[typeNames.length - 1];
  if (typeNames.length === 1 && typeName !== undefined && SERIAL_TYPES.has(typeName)) {
    return reject(
      'core-column-implicit-object',
      `A ${typeName} column on core table ${table} makes PostgreSQL create a sequence named after ${table}, outside ` +
        `the agent namespace. Create a sequence agent_... first and add ${column} as an integer column with ` +
        `DEFAULT nextval('agent_...').`,
    );
  }
  for (const c of constraints) {
    if (c.contype !== undefined && CORE_COLUMN_CONSTRAINTS.has(c.contype)) continue;
    return reject('core-column-constraint', coreConstraintMessage(c, column, table));
  }
  for (const c of constraints) {
    const problem =
      c.contype === 'CONSTR_FOREIGN'
        ? checkCoreForeignKey(c, column, table)
        : c.contype === 'CONSTR_CHECK'
          ? checkCoreCheck(c.raw_expr, column, table, addedColumns, timeDefaulted)
          : undefined;
    if (problem) return problem;
  }
  for (const expr of defaultsOf(col)) {
    const problem = checkCoreDefault(expr, column, table);
    if (problem) return problem;
  }
  const notNull = constraints.some((c) => c.contype === 'CONSTR_NOTNULL');
  // DEFAULT NULL is no default: the NOT NULL column still fails the application's next insert.
  const hasDefault =
    (col.raw_default !== undefined && !isNullConstant(col.raw_default)) ||
    constraints.some((c) => c.contype === 'CONSTR_DEFAULT' && !isNullConstant(c.raw_expr));
  const references = constraints.find((c) => c.contype === 'CONSTR_FOREIGN');
  if (references && hasDefault) {
    return reject(
      'core-fk-default',
      `Core column ${table}.${column} both REFERENCES ${references.pktable?.relname ?? 'another table'} and has a ` +
        'DEFAULT: every application insert, which never sets the column, would then need that row to exist. Leave ' +
        'the DEFAULT out (NULL references nothing).',
    );
  }
  if (notNull && !hasDefault) {
    return reject(
      'not-null-without-default',
      `ADD COLUMN ${column} NOT NULL without a DEFAULT fails on core table ${table} as soon as it has rows. ` +
        `Give the column a DEFAULT (ADD COLUMN ${column} ... NOT NULL DEFAULT ...) or leave it nullable.`,
    );
  }
  return undefined;
}

function coreConstraintMessage(c: Constraint, column: string, table: string): string {
  switch (c.contype) {
    case 'CONSTR_UNIQUE':
    case 'CONSTR_PRIMARY':
      return (
        `An inline ${c.contype === 'CONSTR_UNIQUE' ? 'UNIQUE' : 'PRIMARY KEY'} on core table ${table} creates an ` +
        `index named after ${table}, outside the agent namespace. Add ${column} without it, then ` +
        `CREATE UNIQUE INDEX agent_${table.toLowerCase()}_${column.toLowerCase()}_key ON ${table} (${column}).`
      );
    case 'CONSTR_IDENTITY':
      return (
        `An identity column on core table ${table} creates a sequence named after ${table}, outside the agent ` +
        `namespace. Create a sequence agent_... and use DEFAULT nextval('agent_...') instead.`
      );
    case 'CONSTR_GENERATED':
      return (
        `A generated column on core table ${table} rewrites the table under an exclusive lock. Add a plain ` +
        `column ${column} (with a DEFAULT) instead, or compute the value in a view agent_....`
      );
    default:
      return (
        `This column constraint is not allowed on core table ${table}: ADD COLUMN on a core table may carry ` +
        'DEFAULT, NOT NULL (with a DEFAULT), CHECK and REFERENCES only.'
      );
  }
}

/** Foreign-key actions by their parse-tree letter; `a` (NO ACTION), `r` (RESTRICT) and `n` (SET NULL) are allowed. */
const FK_ACTIONS: Partial<Record<string, string>> = { c: 'CASCADE', d: 'SET DEFAULT' };

/**
 * A core column may reference another table, but deleting or updating the referenced (agent) rows must never delete
 * or rewrite the application's rows (SCHEMA_POLICY.md "Core tables stay the application's").
 */
function checkCoreForeignKey(c: Constraint, column: string, table: string): Verdict | undefined {
  for (const [event, action] of [
    ['DELETE', c.fk_del_action],
    ['UPDATE', c.fk_upd_action],
  ] as const) {
    const shown = FK_ACTIONS[action ?? 'a'];
    if (shown === undefined) continue;
    return reject(
      'core-fk-action',
      `REFERENCES ... ON ${event} ${shown} on core column ${table}.${column} would let a change to the referenced ` +
        `rows ${event === 'DELETE' ? 'delete' : 'rewrite'} the application's rows of ${table}. Use ON ${event} ` +
        'SET NULL, RESTRICT or NO ACTION (the default).',
    );
  }
  return undefined;
}

/**
 * A CHECK on a core table must never start refusing the application's own writes, nor fail them with an error: it
 * may read only the columns this statement adds (which the application does not write), none whose DEFAULT is a
 * time value (the default changes, the CHECK's verdict on it would too), and may use only what an index expression
 * on a core table may (total, linear-time functions and operators) of the immutable kind (no now()).
 */
function checkCoreCheck(
  expr: Node | undefined,
  column: string,
  table: string,
  added: ReadonlySet<string>,
  timeDefaulted: ReadonlySet<string>,
): Verdict | undefined {
  const columns = findInTree(expr, (node, key) => {
    if (key !== 'ColumnRef') return undefined;
    const all = (node.fields as Node[] | undefined) ?? [];
    const fields = namesOf(all);
    if (fields.length !== all.length || fields.length !== 1 || !added.has(fields[0])) {
      return `reads ${fields.length > 0 ? showQualified(fields) : '*'}, which is not a column this statement adds`;
    }
    return undefined;
  });
  if (columns) return coreCheck(columns, column, table);
  const what = nonTotalParts(expr, '');
  if (what) return coreCheck(`uses ${what}, which can raise, be slow or change its verdict later`, column, table);
  const later = findInTree(expr, (node, key) => {
    if (key === 'ColumnRef') {
      const [field] = namesOf(node.fields as Node[] | undefined);
      if (timeDefaulted.has(field)) {
        return (
          `reads ${showIdent(field)}, whose DEFAULT is a time value: every row the application inserts gets a new ` +
          'value, and a CHECK on it could start failing on a date. Give that column a literal DEFAULT, or leave ' +
          'the CHECK out'
        );
      }
    }
    if (key === 'FuncCall') {
      const name = namesOf(node.funcname as Node[] | undefined);
      const last = name[name.length - 1] ?? '';
      // A function no expression may call is refused by the tree rules, with the reason that names it.
      if (isAllowedFunction(last) && !isImmutableFunction(last)) return `calls ${showQualified(name)}, which is not immutable`;
    }
    return undefined;
  });
  return later ? coreCheck(later, column, table) : undefined;
}

function coreCheck(what: string, column: string, table: string): Verdict {
  return reject(
    'core-check',
    `The CHECK on core column ${table}.${column} ${what}. A CHECK on a core table runs on every write of the ` +
      "application's: it may read only the columns the migration adds (none with a time DEFAULT) and use only " +
      'columns, literals, comparisons, AND/OR/NOT, IS [NOT] NULL and the total functions of the schema policy ' +
      `(${totalFunctionNames()}), so that it can never raise nor start refusing the application's own writes. ` +
      'Check anything else in a tool, or keep the data in an agent_ side table keyed by the core row.',
  );
}

/** The DEFAULT expressions of a column definition (inline `DEFAULT` and a raw default). */
function defaultsOf(col: ColumnDef): Node[] {
  const out: Node[] = [];
  if (col.raw_default !== undefined) out.push(col.raw_default);
  for (const c of constraintsOf(col.constraints)) if (c.contype === 'CONSTR_DEFAULT' && c.raw_expr !== undefined) out.push(c.raw_expr);
  return out;
}

/** True when the column's DEFAULT is now(), CURRENT_TIMESTAMP or another time value. */
export function hasTimeDefault(col: ColumnDef): boolean {
  return defaultsOf(col).some(isTimeValue);
}

/** NULL, or NULL cast to a type. */
function isNullConstant(expr: Node | undefined): boolean {
  if (!expr) return false;
  if ('A_Const' in expr) return expr.A_Const.isnull === true;
  if ('TypeCast' in expr) return isNullConstant(expr.TypeCast.arg);
  return false;
}
