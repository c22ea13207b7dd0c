import type { CoreTablesUsage } from '../contract/policy-verdict';

/** A rule's decision on one statement. */
export interface Verdict {
  accepted: boolean;
  rule: string;
  message: string;
}

/** Settings every rule sees. */
export interface RuleContext {
  /** The one schema a qualifier may name. */
  schema: string;
  /** What each core table carries of the agent's already, for the caps (PolicyOptions.coreTables). */
  coreTables?: CoreTablesUsage;
}

export function accept(rule: string, message: string): Verdict {
  return { accepted: true, rule, message };
}

export function reject(rule: string, message: string): Verdict {
  return { accepted: false, rule, message };
}

/** What a core-table refusal always offers instead (SCHEMA_POLICY.md: ADD COLUMN and CREATE INDEX agent_*). */
export function coreAlternatives(table: string): string {
  return (
    `On a core table only ALTER TABLE ${table} ADD COLUMN ... and CREATE INDEX agent_... ON ${table} (...) are ` +
    `allowed; for anything else create your own agent_ table (it may reference ${table} with REFERENCES).`
  );
}
