import type { ColumnDef, Constraint, Node } from 'libpg-query';
import { isAgentName, namesOf, showIdent, suggestAgentName } from './names';
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
export function constraintsOf(list: Node[] | undefined): Constraint[] {
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
export function checkColumnDef(col: ColumnDef, table: string, core: boolean): Verdict | undefined {
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
  const notNull = constraints.some((c) => c.contype === 'CONSTR_NOTNULL');
  const hasDefault = col.raw_default !== undefined || constraints.some((c) => c.contype === 'CONSTR_DEFAULT');
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
