/** Options of {@link checkMigration}. */
export interface PolicyOptions {
  /** The one schema a qualified name may name (SCHEMA_POLICY.md "Names"); default `public`. */
  schema?: string;
}

export type { MigrationProblem, PolicyReport, StatementLocation, StatementVerdict } from '../contract/policy-verdict';
