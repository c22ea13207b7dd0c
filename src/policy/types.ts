import type { CoreTablesUsage } from './core-caps';

/** Options of {@link checkMigration}. */
export interface PolicyOptions {
  /** The one schema a qualified name may name (SCHEMA_POLICY.md "Names"); default `public`. */
  schema?: string;
  /**
   * What each core table of the schema carries of the agent's already (agent_ columns and indexes), so that the caps
   * of SCHEMA_POLICY.md "Round three" count them: the migration activity reads it from the database. Without it,
   * only what the migration itself adds is counted.
   */
  coreTables?: CoreTablesUsage;
}

export type { MigrationProblem, PolicyReport, StatementLocation, StatementVerdict } from '../contract/policy-verdict';
