import type { CommentStmt, DropStmt } from 'libpg-query';
import { FORGE_TABLE_NAMES } from '../contract/forge-tables';
import { cascade } from './alter-rules';
import { qualifierProblem } from './create-rules';
import { refusals } from './forbidden-kinds';
import { isAgentName, namesOfListNode, showIdent, showQualified } from './names';
import { forgeTable } from './tree-rules';
import type { RuleContext, Verdict } from './verdict';
import { accept, reject } from './verdict';

/** DROP: only DROP INDEX of agent_ indexes (not CONCURRENTLY, not CASCADE); every other DROP is refused. */
export function checkDrop(s: DropStmt, ctx: RuleContext): Verdict {
  const what = (s.removeType ?? 'OBJECT_UNKNOWN').replace('OBJECT_', '').replace('_', ' ');
  if (s.removeType !== 'OBJECT_INDEX') return refusals.drop(`DROP ${what}`);
  if (s.concurrent) return refusals.nonTransactional('DROP INDEX CONCURRENTLY');
  const indexes = (s.objects ?? []).map(namesOfListNode);
  for (const names of indexes) {
    const foreign = qualifierProblem(names, 1, ctx);
    if (foreign) return foreign;
    const name = names[names.length - 1] ?? '';
    if (!isAgentName(name)) return refusals.drop(`DROP INDEX ${showIdent(name)} (not an agent_ index)`);
  }
  if (s.behavior === 'DROP_CASCADE') return cascade('DROP INDEX');
  const shown = indexes.map((n) => showQualified(n)).join(', ');
  return accept('drop-agent-index', `Drops agent index ${shown}.`);
}

/** How many trailing parts of a COMMENT ON object name are not the schema, by object type. */
const COMMENT_DEPTH: Partial<Record<string, number>> = {
  OBJECT_TABLE: 1,
  OBJECT_VIEW: 1,
  OBJECT_SEQUENCE: 1,
  OBJECT_INDEX: 1,
  OBJECT_TYPE: 1,
  OBJECT_COLUMN: 2,
  OBJECT_TABCONSTRAINT: 2,
};

/**
 * COMMENT ON agent_ objects: tables, views, sequences, indexes, types, constraints named agent_..., and columns
 * of agent tables.
 */
export function checkComment(s: CommentStmt, ctx: RuleContext): Verdict {
  const objtype = s.objtype ?? '';
  const depth = COMMENT_DEPTH[objtype];
  const what = objtype.replace('OBJECT_', '').replace('TABCONSTRAINT', 'CONSTRAINT');
  if (depth === undefined) {
    return reject(
      'default-deny',
      `COMMENT ON ${what} is not allowed; a migration may comment on its own agent_ tables, views, sequences, ` +
        'indexes, types, constraints and columns of agent tables.',
    );
  }
  const names = namesOfListNode(s.object);
  const foreign = qualifierProblem(names, depth, ctx);
  if (foreign) return foreign;
  // For a column the owning table decides, or the column's own name (an agent column of a core table, added by
  // this migration or an earlier one: PostgreSQL refuses the comment if there is no such column); for a
  // constraint its own name (it may sit on a core table).
  const owner = objtype === 'OBJECT_COLUMN' ? names[names.length - 2] : names[names.length - 1];
  const agentColumn = objtype === 'OBJECT_COLUMN' && isAgentName(names[names.length - 1]);
  if (FORGE_TABLE_NAMES.has(owner ?? '')) return forgeTable(showQualified(names));
  if (!isAgentName(owner) && !agentColumn) {
    return reject(
      'agent-namespace',
      `COMMENT ON ${what} ${showQualified(names)}: only agent_ objects may be commented on by a migration. ` + 'Comment on your own agent_ objects instead.',
    );
  }
  return accept('comment-agent-object', `Comments on ${what.toLowerCase()} ${showQualified(names)}.`);
}
