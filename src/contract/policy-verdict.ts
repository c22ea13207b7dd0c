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
  /** Its columns' types, for the width of an index on it (`core-index-width`); absent, they are not judged. */
  columns?: Readonly<Record<string, CoreColumnFacts>>;
}

/** What the catalog says of a core table's column (its base type, for a domain), for the width of its values. */
export interface CoreColumnFacts {
  /** pg_type.typname: `text`, `varchar`, `int4`, `_text` (an array), ... */
  type: string;
  /** pg_type.typlen: the fixed width in bytes, or -1 (variable) / -2 (C string). */
  length: number;
  /** pg_attribute.atttypmod (the domain's typtypmod for a domain): `varchar(n)` is n + 4, -1 when none. */
  typmod: number;
  /** For an array: its element type's typlen. */
  elementLength?: number;
  /** For a range: its subtype's typlen. */
  rangeSubtypeLength?: number;
  /**
   * A plain, non-partial index of the application's (not `agent_`) holds the column as one of its values: the
   * application's rows already fit in an index entry.
   */
  appIndexed: boolean;
  /**
   * For an agent column: the length of its DEFAULT as text (0 without one), which bounds what the application's
   * inserts put in it (they never name the column; the agent's own writes are the agent's to fit).
   */
  defaultBytes?: number;
  /** Its collation is nondeterministic: `col = 'x'` may hold for longer strings than 'x'. */
  nondeterministic?: true;
}

/** Core table name (unqualified: the configured schema is the only one a migration may name) → its usage. */
export type CoreTablesUsage = Readonly<Record<string, CoreTableUsage>>;
