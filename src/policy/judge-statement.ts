import type {
  AlterTableStmt,
  CommentStmt,
  CompositeTypeStmt,
  CreateEnumStmt,
  CreateRangeStmt,
  CreateSeqStmt,
  CreateStmt,
  DefineStmt,
  DropStmt,
  IndexStmt,
  Node,
  RenameStmt,
  SelectStmt,
  VacuumStmt,
  VariableSetStmt,
  ViewStmt,
} from 'libpg-query';
import { checkAlterTable, checkRename } from './alter-rules';
import { checkCreateIndex, checkCreateSequence, checkCreateTable, checkCreateType, checkCreateView } from './create-rules';
import { alwaysRejected, refusals } from './forbidden-kinds';
import { checkComment, checkDrop } from './object-rules';
import type { RuleContext, Verdict } from './verdict';
import { reject } from './verdict';

/** The parse-tree node name of a statement (`CreateStmt`, ...). */
export function nodeKind(node: Node): string {
  return Object.keys(node)[0] ?? 'Unknown';
}

/**
 * Judges one parsed statement by its kind alone (schema qualifiers and identifier lengths are checked afterwards,
 * over the whole tree). Kinds not handled here are refused: default deny.
 */
export function judgeStatement(node: Node, ctx: RuleContext): Verdict {
  const kind = nodeKind(node);
  const body = (node as Record<string, unknown>)[kind];
  switch (kind) {
    case 'CreateStmt':
      return checkCreateTable(body as CreateStmt);
    case 'IndexStmt':
      return checkCreateIndex(body as IndexStmt);
    case 'AlterTableStmt':
      return checkAlterTable(body as AlterTableStmt);
    case 'ViewStmt':
      return checkCreateView(body as ViewStmt);
    case 'CreateSeqStmt':
      return checkCreateSequence(body as CreateSeqStmt, ctx);
    case 'CompositeTypeStmt':
    case 'CreateEnumStmt':
    case 'CreateRangeStmt':
      return checkCreateType(body as CompositeTypeStmt | CreateEnumStmt | CreateRangeStmt, ctx);
    case 'RenameStmt':
      return checkRename(body as RenameStmt, ctx);
    case 'CommentStmt':
      return checkComment(body as CommentStmt, ctx);
    case 'DropStmt':
      return checkDrop(body as DropStmt, ctx);
    case 'SelectStmt':
      return (body as SelectStmt).intoClause ? refusals.createAs() : refusals.dml();
    case 'VariableSetStmt': {
      const name = (body as VariableSetStmt).name;
      if (name === 'role' || name === 'session_authorization') {
        return refusals.privileges(name === 'role' ? 'SET ROLE' : 'SET SESSION AUTHORIZATION');
      }
      return refusals.session('SET / RESET');
    }
    case 'VacuumStmt':
      return (body as VacuumStmt).is_vacuumcmd ? refusals.nonTransactional('VACUUM') : defaultDeny('ANALYZE');
    case 'DefineStmt':
      return checkDefine(body as DefineStmt);
  }
  return alwaysRejected(kind) ?? defaultDeny(kind);
}

function checkDefine(s: DefineStmt): Verdict {
  switch (s.kind) {
    case 'OBJECT_AGGREGATE':
      return refusals.code('CREATE AGGREGATE');
    case 'OBJECT_OPERATOR':
      return refusals.code('CREATE OPERATOR');
    case 'OBJECT_TYPE':
      return reject(
        'default-deny',
        'CREATE TYPE with input/output functions (a base type) is not allowed. Use CREATE TYPE agent_... AS ' +
          '(field type, ...), AS ENUM (...) or AS RANGE (...).',
      );
    default:
      return defaultDeny(`CREATE ${(s.kind ?? '').replace('OBJECT_', '')}`);
  }
}

/** The default-deny verdict: `what` is not among the accepted statements of SCHEMA_POLICY.md. */
function defaultDeny(what: string): Verdict {
  return reject(
    'default-deny',
    `${what} is not among the statements a migration may run (default deny). Allowed: CREATE TABLE, CREATE ` +
      '[UNIQUE] INDEX, CREATE VIEW, CREATE SEQUENCE, CREATE TYPE (all named agent_...), ALTER TABLE (only ADD ' +
      'COLUMN on core tables), RENAME within the agent namespace, DROP INDEX agent_..., COMMENT ON agent_ objects.',
  );
}
