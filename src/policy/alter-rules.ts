import type { AlterTableCmd, AlterTableStmt, RenameStmt } from 'libpg-query';
import { FORGE_LEGACY_NAMES, FORGE_TABLE_NAMES } from '../contract/forge-tables';
import { checkColumnDef, checkConstraintName, hasTimeDefault } from './column-rules';
import { qualifierProblem, showRelation } from './create-rules';
import { refusals } from './forbidden-kinds';
import { isAgentName, namesOfListNode, showIdent, suggestAgentName } from './names';
import { forgeTable } from './tree-rules';
import type { RuleContext, Verdict } from './verdict';
import { accept, coreAlternatives, reject } from './verdict';

/** Readable names of ALTER TABLE actions, for messages. */
const ACTION_NAMES: Partial<Record<string, string>> = {
  AT_AddColumn: 'ADD COLUMN',
  AT_ColumnDefault: 'ALTER COLUMN SET/DROP DEFAULT',
  AT_SetNotNull: 'ALTER COLUMN SET NOT NULL',
  AT_DropNotNull: 'ALTER COLUMN DROP NOT NULL',
  AT_AlterColumnType: 'ALTER COLUMN TYPE',
  AT_AddConstraint: 'ADD CONSTRAINT',
  AT_DropConstraint: 'DROP CONSTRAINT',
  AT_DropColumn: 'DROP COLUMN',
  AT_ValidateConstraint: 'VALIDATE CONSTRAINT',
  AT_AlterConstraint: 'ALTER CONSTRAINT',
  AT_AddIndexConstraint: 'ADD CONSTRAINT ... USING INDEX',
  AT_ChangeOwner: 'OWNER TO',
  AT_SetTableSpace: 'SET TABLESPACE',
  AT_SetStorage: 'ALTER COLUMN SET STORAGE',
  AT_SetStatistics: 'ALTER COLUMN SET STATISTICS',
  AT_SetCompression: 'ALTER COLUMN SET COMPRESSION',
  AT_SetRelOptions: 'SET (storage options)',
  AT_ResetRelOptions: 'RESET (storage options)',
  AT_SetLogged: 'SET LOGGED',
  AT_SetUnLogged: 'SET UNLOGGED',
  AT_SetAccessMethod: 'SET ACCESS METHOD',
  AT_EnableTrig: 'ENABLE TRIGGER',
  AT_DisableTrig: 'DISABLE TRIGGER',
  AT_EnableRule: 'ENABLE RULE',
  AT_DisableRule: 'DISABLE RULE',
  AT_EnableRowSecurity: 'ENABLE ROW LEVEL SECURITY',
  AT_DisableRowSecurity: 'DISABLE ROW LEVEL SECURITY',
  AT_ForceRowSecurity: 'FORCE ROW LEVEL SECURITY',
  AT_AddInherit: 'INHERIT',
  AT_DropInherit: 'NO INHERIT',
  AT_AttachPartition: 'ATTACH PARTITION',
  AT_DetachPartition: 'DETACH PARTITION',
  AT_ReplicaIdentity: 'REPLICA IDENTITY',
  AT_ClusterOn: 'CLUSTER ON',
  AT_AddIdentity: 'ALTER COLUMN ADD IDENTITY',
  AT_SetIdentity: 'ALTER COLUMN SET (identity)',
  AT_DropIdentity: 'ALTER COLUMN DROP IDENTITY',
  AT_SetExpression: 'ALTER COLUMN SET EXPRESSION',
  AT_DropExpression: 'ALTER COLUMN DROP EXPRESSION',
};

/** Actions SCHEMA_POLICY.md allows on agent tables, besides ADD COLUMN (allowed everywhere). */
const AGENT_TABLE_ACTIONS = new Set([
  'AT_AddColumn',
  'AT_AlterColumnType',
  'AT_ColumnDefault',
  'AT_SetNotNull',
  'AT_DropNotNull',
  'AT_AddConstraint',
  'AT_DropConstraint',
]);

/** Actions allowed by ALTER VIEW on an agent view. */
const AGENT_VIEW_ACTIONS = new Set(['AT_ColumnDefault', 'AT_SetRelOptions', 'AT_ResetRelOptions']);

function actionName(cmd: AlterTableCmd): string {
  return ACTION_NAMES[cmd.subtype ?? ''] ?? (cmd.subtype ?? 'unknown action').replace('AT_', '');
}

/**
 * ALTER TABLE (and ALTER VIEW, which parses to the same node): every comma-joined action is checked on its own, and
 * the first refused action decides. On core tables only ADD COLUMN passes.
 */
export function checkAlterTable(s: AlterTableStmt): Verdict {
  const table = showRelation(s.relation);
  const agent = isAgentName(s.relation?.relname);
  const cmds = (s.cmds ?? []).flatMap((n) => ('AlterTableCmd' in n ? [n.AlterTableCmd] : []));
  const objtype = s.objtype ?? 'OBJECT_TABLE';
  if (objtype === 'OBJECT_VIEW') return checkAlterView(table, agent, cmds);
  if (objtype !== 'OBJECT_TABLE') {
    return reject(
      'default-deny',
      `ALTER ${objtype.replace('OBJECT_', '')} is not among the statements a migration may run. ` +
        'Allowed: CREATE TABLE/INDEX/VIEW/SEQUENCE/TYPE agent_..., ALTER TABLE (ADD COLUMN on core tables), ' +
        'COMMENT ON agent_ objects.',
    );
  }
  const addedDefs = cmds.flatMap((c) => (c.subtype === 'AT_AddColumn' && c.def && 'ColumnDef' in c.def ? [c.def.ColumnDef] : []));
  const added = new Set(addedDefs.map((d) => d.colname ?? ''));
  const timeDefaulted = new Set(addedDefs.filter(hasTimeDefault).map((d) => d.colname ?? ''));
  for (let i = 0; i < cmds.length; i++) {
    const problem = agent ? checkAgentAction(cmds[i], table) : checkCoreAction(cmds[i], table, added, timeDefaulted);
    if (problem) return cmds.length > 1 ? withAction(problem, i, cmds[i]) : problem;
  }
  return agent
    ? accept('alter-agent-table', `Alters agent table ${table}.`)
    : accept('core-add-column', `Adds ${cmds.length === 1 ? 'a column' : 'columns'} to core table ${table}.`);
}

function withAction(v: Verdict, i: number, cmd: AlterTableCmd): Verdict {
  return { ...v, message: `Action ${i + 1} (${actionName(cmd)}): ${v.message}` };
}

function checkCoreAction(cmd: AlterTableCmd, table: string, added: ReadonlySet<string>, timeDefaulted: ReadonlySet<string>): Verdict | undefined {
  if (cmd.subtype === 'AT_AddColumn') {
    const def = cmd.def && 'ColumnDef' in cmd.def ? cmd.def.ColumnDef : undefined;
    return def ? checkColumnDef(def, table, true, added, timeDefaulted) : undefined;
  }
  if (cmd.subtype === 'AT_DropColumn') return refusals.drop(`ALTER TABLE ${table} DROP COLUMN`);
  if (cmd.subtype === 'AT_ChangeOwner') return refusals.privileges(`ALTER TABLE ${table} OWNER TO`);
  return reject('core-table-alter', `${actionName(cmd)} would change core table ${table}. ${coreAlternatives(table)}`);
}

function checkAgentAction(cmd: AlterTableCmd, table: string): Verdict | undefined {
  const subtype = cmd.subtype ?? '';
  if (subtype === 'AT_DropColumn') return refusals.drop(`ALTER TABLE ${table} DROP COLUMN`);
  if (subtype === 'AT_ChangeOwner') return refusals.privileges(`ALTER TABLE ${table} OWNER TO`);
  if (!AGENT_TABLE_ACTIONS.has(subtype)) {
    return reject(
      'alter-action-forbidden',
      `${actionName(cmd)} is not allowed, even on agent table ${table}. Allowed: ADD COLUMN, ALTER COLUMN ` +
        'TYPE / SET|DROP DEFAULT / SET|DROP NOT NULL, ADD CONSTRAINT agent_..., DROP CONSTRAINT agent_..., RENAME.',
    );
  }
  if (subtype === 'AT_AddColumn' && cmd.def && 'ColumnDef' in cmd.def) return checkColumnDef(cmd.def.ColumnDef, table, false);
  if (subtype === 'AT_AddConstraint' && cmd.def && 'Constraint' in cmd.def) return checkConstraintName(cmd.def.Constraint, table);
  if (subtype === 'AT_DropConstraint') {
    if (!isAgentName(cmd.name)) {
      return refusals.drop(`DROP CONSTRAINT ${showIdent(cmd.name ?? '?')} (not an agent_ constraint)`);
    }
    if (cmd.behavior === 'DROP_CASCADE') return cascade(`DROP CONSTRAINT ${showIdent(cmd.name)}`);
  }
  return undefined;
}

function checkAlterView(view: string, agent: boolean, cmds: AlterTableCmd[]): Verdict {
  if (!agent) {
    return reject('agent-namespace', `ALTER VIEW ${view}: only agent_ views may be altered. Create your own view agent_... instead.`);
  }
  for (const cmd of cmds) {
    if (cmd.subtype === 'AT_ChangeOwner') return refusals.privileges(`ALTER VIEW ${view} OWNER TO`);
    if (!AGENT_VIEW_ACTIONS.has(cmd.subtype ?? '')) {
      return reject('alter-action-forbidden', `ALTER VIEW ... ${actionName(cmd)} is not allowed; use CREATE OR REPLACE VIEW ${view} to change the view.`);
    }
  }
  return accept('alter-agent-view', `Alters agent view ${view}.`);
}

/** Refuses CASCADE, which could reach objects outside the agent namespace (a core column's foreign key). */
export function cascade(what: string): Verdict {
  return reject(
    'cascade-forbidden',
    `${what} CASCADE could drop objects that depend on it outside the agent namespace. Drop the dependants ` +
      'explicitly (if they are agent_ objects) and use RESTRICT (the default).',
  );
}

const RENAMED_RELATIONS: Partial<Record<string, string>> = {
  OBJECT_TABLE: 'table',
  OBJECT_INDEX: 'index',
  OBJECT_VIEW: 'view',
  OBJECT_SEQUENCE: 'sequence',
};

/**
 * RENAME: of agent tables, indexes, views, sequences, types, constraints and of columns of agent tables; the new
 * name of an object must stay in the agent namespace. Nothing of a core table may be renamed.
 */
export function checkRename(s: RenameStmt, ctx: RuleContext): Verdict {
  const renameType = s.renameType ?? '';
  const newname = s.newname ?? '';
  const relation = showRelation(s.relation);
  const relAgent = isAgentName(s.relation?.relname);
  const leaves = (what: string, old: string): Verdict =>
    reject(
      'rename-leaves-namespace',
      `Renaming ${what} ${showIdent(old)} to ${showIdent(newname)} would take it out of the agent namespace. ` +
        `Choose a new name that starts with agent_, e.g. ${suggestAgentName(newname)}.`,
    );
  // The new name is judged by every name rule of a CREATE: Forge's reserved names too (agent_migrations was Forge's).
  if (renameType !== 'OBJECT_COLUMN' && (FORGE_LEGACY_NAMES.has(newname) || FORGE_TABLE_NAMES.has(newname))) {
    return forgeTable(showIdent(newname));
  }
  const relationWhat = RENAMED_RELATIONS[renameType];
  if (relationWhat !== undefined) {
    const old = s.relation?.relname ?? '';
    if (!relAgent) {
      return renameType === 'OBJECT_TABLE'
        ? reject('core-table-alter', `RENAME would change core table ${relation}. ${coreAlternatives(relation)}`)
        : reject('agent-namespace', `Only agent_ objects may be renamed; ${relationWhat} ${relation} is not one.`);
    }
    if (!isAgentName(newname)) return leaves(relationWhat, old);
    return accept('rename-agent-object', `Renames ${relationWhat} ${relation} to ${showIdent(newname)}.`);
  }
  if (renameType === 'OBJECT_COLUMN' || renameType === 'OBJECT_TABCONSTRAINT') {
    const what = renameType === 'OBJECT_COLUMN' ? 'column' : 'constraint';
    if (!relAgent) {
      return reject('core-table-alter', `RENAME ${what.toUpperCase()} would change core table ${relation}. ${coreAlternatives(relation)}`);
    }
    if (what === 'constraint') {
      if (!isAgentName(s.subname)) return reject('agent-namespace', `Only agent_ constraints may be renamed; ${showIdent(s.subname ?? '?')} is not one.`);
      if (!isAgentName(newname)) return leaves('constraint', s.subname);
    }
    return accept(`rename-agent-${what}`, `Renames ${what} ${showIdent(s.subname ?? '?')} of ${relation} to ${showIdent(newname)}.`);
  }
  if (renameType === 'OBJECT_TYPE') {
    const names = namesOfListNode(s.object);
    const old = names[names.length - 1] ?? '';
    const foreign = qualifierProblem(names, 1, ctx);
    if (foreign) return foreign;
    if (!isAgentName(old)) return reject('agent-namespace', `Only agent_ types may be renamed; ${showIdent(old)} is not one.`);
    if (!isAgentName(newname)) return leaves('type', old);
    return accept('rename-agent-object', `Renames type ${showIdent(old)} to ${showIdent(newname)}.`);
  }
  return reject(
    'default-deny',
    `This RENAME (${renameType.replace('OBJECT_', '')}) is not among the statements a migration may run. Only ` +
      'agent_ tables, indexes, views, sequences, types, constraints and columns of agent tables may be renamed.',
  );
}
