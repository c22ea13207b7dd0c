import type { Verdict } from './verdict';
import { reject } from './verdict';

interface Refusal {
  rule: string;
  message: string;
}

const DML: Refusal = {
  rule: 'dml-forbidden',
  message:
    'A migration changes the schema only: queries and data changes (INSERT, UPDATE, DELETE, MERGE, SELECT, ' +
    'EXPLAIN) do not belong in it. Remove the statement; fill or read tables from the application or a tool.',
};
const CREATE_AS: Refusal = {
  rule: 'create-table-as-forbidden',
  message:
    'CREATE TABLE AS, SELECT INTO and materialized views copy data in a migration. Declare the table instead: ' +
    'CREATE TABLE agent_... (column type, ...), and fill it from the application.',
};
const CODE = (what: string): Refusal => ({
  rule: 'code-forbidden',
  message:
    `${what} installs or runs code that executes later or elsewhere, which a migration may not do. Remove it; ` +
    'put the logic in a tool (forge deploy) or in the application.',
});
const PRIVILEGES = (what: string): Refusal => ({
  rule: 'privileges-forbidden',
  message: `${what} changes privileges, roles or ownership, which an agent migration may not do. Remove it; ask an operator if access must change.`,
});
const SESSION = (what: string): Refusal => ({
  rule: 'session-forbidden',
  message:
    `${what} changes session, database or server settings. The system sets lock_timeout and statement_timeout ` + 'itself (SET LOCAL); remove the statement.',
});
const TRANSACTION = (what: string): Refusal => ({
  rule: 'transaction-control-forbidden',
  message:
    `${what} controls the transaction, but the migration runs inside one transaction that the system owns. ` +
    'Remove it; the whole migration commits or rolls back as one.',
});
const NON_TRANSACTIONAL = (what: string): Refusal => ({
  rule: 'non-transactional',
  message:
    `${what} cannot run inside a transaction block, and the migration runs in one. Remove it ` + '(for an index: CREATE INDEX agent_... without CONCURRENTLY).',
});
const DROP = (what: string): Refusal => ({
  rule: 'drop-forbidden',
  message:
    `${what} destroys something, and migrations only add. Remove it; only DROP INDEX agent_... and ` +
    'ALTER TABLE agent_... DROP CONSTRAINT agent_... are allowed.',
});

/**
 * Statement kinds that SCHEMA_POLICY.md rejects whatever they name ("Rejected, always"), by parse-tree node name.
 * Kinds with exceptions (DropStmt, IndexStmt, SelectStmt INTO, VariableSetStmt ROLE) are decided by their own rules.
 */
const ALWAYS_REJECTED: Record<string, Refusal> = {
  InsertStmt: DML,
  UpdateStmt: DML,
  DeleteStmt: DML,
  MergeStmt: DML,
  SelectStmt: DML,
  ExplainStmt: DML,
  DeclareCursorStmt: DML,
  FetchStmt: DML,
  ClosePortalStmt: DML,
  PrepareStmt: DML,
  ExecuteStmt: DML,
  DeallocateStmt: DML,
  CopyStmt: {
    rule: 'copy-forbidden',
    message: 'COPY moves data (or reads and writes files), which a migration may not do. Remove it.',
  },
  CreateTableAsStmt: CREATE_AS,
  RefreshMatViewStmt: CREATE_AS,
  TruncateStmt: {
    rule: 'truncate-forbidden',
    message: 'TRUNCATE destroys data, and migrations only add. Remove it.',
  },
  CreateFunctionStmt: CODE('CREATE FUNCTION / PROCEDURE'),
  AlterFunctionStmt: CODE('ALTER FUNCTION / PROCEDURE'),
  CreateTrigStmt: CODE('CREATE TRIGGER'),
  CreateEventTrigStmt: CODE('CREATE EVENT TRIGGER'),
  AlterEventTrigStmt: CODE('ALTER EVENT TRIGGER'),
  RuleStmt: CODE('CREATE RULE'),
  CreateExtensionStmt: CODE('CREATE EXTENSION'),
  AlterExtensionStmt: CODE('ALTER EXTENSION'),
  AlterExtensionContentsStmt: CODE('ALTER EXTENSION'),
  CreatePLangStmt: CODE('CREATE LANGUAGE'),
  CreateCastStmt: CODE('CREATE CAST'),
  CreateOpClassStmt: CODE('CREATE OPERATOR CLASS'),
  CreateOpFamilyStmt: CODE('CREATE OPERATOR FAMILY'),
  AlterOpFamilyStmt: CODE('ALTER OPERATOR FAMILY'),
  AlterOperatorStmt: CODE('ALTER OPERATOR'),
  CreateTransformStmt: CODE('CREATE TRANSFORM'),
  CreateConversionStmt: CODE('CREATE CONVERSION'),
  DoStmt: CODE('A DO block'),
  CallStmt: CODE('CALL'),
  LoadStmt: CODE('LOAD'),
  GrantStmt: PRIVILEGES('GRANT / REVOKE'),
  GrantRoleStmt: PRIVILEGES('GRANT / REVOKE of a role'),
  CreateRoleStmt: PRIVILEGES('CREATE ROLE / USER'),
  AlterRoleStmt: PRIVILEGES('ALTER ROLE / USER'),
  AlterRoleSetStmt: PRIVILEGES('ALTER ROLE ... SET'),
  AlterDefaultPrivilegesStmt: PRIVILEGES('ALTER DEFAULT PRIVILEGES'),
  AlterOwnerStmt: PRIVILEGES('ALTER ... OWNER TO'),
  ReassignOwnedStmt: PRIVILEGES('REASSIGN OWNED'),
  CreatePolicyStmt: PRIVILEGES('CREATE POLICY'),
  AlterPolicyStmt: PRIVILEGES('ALTER POLICY'),
  DropRoleStmt: DROP('DROP ROLE'),
  DropdbStmt: DROP('DROP DATABASE'),
  DropOwnedStmt: DROP('DROP OWNED'),
  DropTableSpaceStmt: DROP('DROP TABLESPACE'),
  DropSubscriptionStmt: DROP('DROP SUBSCRIPTION'),
  DropUserMappingStmt: DROP('DROP USER MAPPING'),
  AlterSystemStmt: SESSION('ALTER SYSTEM'),
  AlterDatabaseStmt: SESSION('ALTER DATABASE'),
  AlterDatabaseSetStmt: SESSION('ALTER DATABASE ... SET'),
  AlterDatabaseRefreshCollStmt: SESSION('ALTER DATABASE ... REFRESH COLLATION VERSION'),
  ConstraintsSetStmt: SESSION('SET CONSTRAINTS'),
  VariableShowStmt: SESSION('SHOW'),
  DiscardStmt: SESSION('DISCARD'),
  ListenStmt: SESSION('LISTEN'),
  UnlistenStmt: SESSION('UNLISTEN'),
  NotifyStmt: SESSION('NOTIFY'),
  CheckPointStmt: SESSION('CHECKPOINT'),
  TransactionStmt: TRANSACTION('BEGIN / COMMIT / ROLLBACK / SAVEPOINT / RELEASE / PREPARE TRANSACTION'),
  LockStmt: TRANSACTION('LOCK'),
  ReindexStmt: NON_TRANSACTIONAL('REINDEX'),
  ClusterStmt: NON_TRANSACTIONAL('CLUSTER'),
  CreatedbStmt: NON_TRANSACTIONAL('CREATE DATABASE'),
  CreateTableSpaceStmt: NON_TRANSACTIONAL('CREATE TABLESPACE'),
  AlterObjectSchemaStmt: {
    rule: 'set-schema-forbidden',
    message: 'ALTER ... SET SCHEMA moves an object out of the configured schema. Remove it; keep agent_ objects where they are.',
  },
};

/** The always-rejected verdict for a statement kind, or undefined when the kind has rules of its own. */
export function alwaysRejected(kind: string): Verdict | undefined {
  const refusal = ALWAYS_REJECTED[kind];
  return refusal ? reject(refusal.rule, refusal.message) : undefined;
}

/** Verdicts shared with the kind-specific rules. */
export const refusals = {
  dml: (): Verdict => reject(DML.rule, DML.message),
  createAs: (): Verdict => reject(CREATE_AS.rule, CREATE_AS.message),
  drop: (what: string): Verdict => reject(DROP(what).rule, DROP(what).message),
  nonTransactional: (what: string): Verdict => reject(NON_TRANSACTIONAL(what).rule, NON_TRANSACTIONAL(what).message),
  privileges: (what: string): Verdict => reject(PRIVILEGES(what).rule, PRIVILEGES(what).message),
  session: (what: string): Verdict => reject(SESSION(what).rule, SESSION(what).message),
  code: (what: string): Verdict => reject(CODE(what).rule, CODE(what).message),
};
