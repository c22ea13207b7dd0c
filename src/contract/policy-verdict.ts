/** The schema policy's verdicts (SCHEMA_POLICY.md), as `forge lint-sql --json` and migration results carry them. */

/** Where a statement sits in the migration text: 0-based UTF-16 offset, 1-based line and column. */
export interface StatementLocation {
  offset: number;
  line: number;
  column: number;
}

/** The verdict on one statement; the shape of one entry of `forge lint-sql --json`. */
export interface StatementVerdict {
  /** 0-based position of the statement in the migration. */
  index: number;
  /** Parse-tree node name (`CreateStmt`, `AlterTableStmt`, ...), or `ParseError` when it does not parse. */
  kind: string;
  accepted: boolean;
  /** Stable machine id of the rule that decided (accepting rules too, e.g. `create-agent-table`). */
  rule?: string;
  /** A sentence an agent can act on. */
  message?: string;
  /** The statement's text as PostgreSQL would see it (leading comments and the `;` left out). */
  text: string;
  location?: StatementLocation;
}

/**
 * Why a whole migration is refused before any statement is judged (SCHEMA_POLICY.md "Limits"): a NUL byte
 * (`nul-byte`), text that is not UTF-8 (`invalid-utf8`), too much SQL (`too-large`), too many statements
 * (`too-many-statements`).
 */
export interface MigrationProblem {
  rule: string;
  message: string;
  location?: StatementLocation;
}

/** The verdict on a whole migration: accepted only when every statement is. */
export interface PolicyReport {
  accepted: boolean;
  /** Empty when `problem` refused the migration as a whole. */
  statements: StatementVerdict[];
  /** Set when the migration is refused as a whole; then no statement was judged. */
  problem?: MigrationProblem;
}

/** What a core table carries of the agent's already (`agent_` columns and indexes), for the round-three caps. */
export interface CoreTableUsage {
  agentColumns: number;
  agentIndexes: number;
}

/** Core table name (unqualified: the configured schema is the only one a migration may name) → its usage. */
export type CoreTablesUsage = Readonly<Record<string, CoreTableUsage>>;
