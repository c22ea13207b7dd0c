import { checkMigrationSync, loadPolicyParser } from '../src/policy';
import { percentile, round } from './stats';
import type { Bench } from './types';

/** A realistic agent migration: a table, an index on it, a column and an index on a core table, a comment. */
const MIGRATION = `-- agent migration: remember which documents a user starred
CREATE TABLE agent_user_stars (
  id bigserial PRIMARY KEY,
  user_id bigint NOT NULL REFERENCES users (id),
  document_id bigint NOT NULL,
  starred_at timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT agent_user_stars_once UNIQUE (user_id, document_id)
);
CREATE INDEX agent_user_stars_doc_idx ON agent_user_stars (document_id);
ALTER TABLE users ADD COLUMN agent_star_count integer NOT NULL DEFAULT 0 CHECK (agent_star_count >= 0);
CREATE INDEX agent_users_star_count_idx ON users (agent_star_count) WHERE agent_star_count > 0;
COMMENT ON TABLE agent_user_stars IS 'Stars set by the assistant; one row per (user, document).';
`;

const WARMUP = 200;
const RUNS = 2000;

/** Policy check of a 5-statement migration, parser already loaded: p50 over 2,000 runs after 200 warm-up runs. */
export const policyCheck: Bench = {
  name: 'policy-check',
  description: `schema policy check of a realistic 5-statement migration (p50 of ${RUNS} runs after ${WARMUP} warm-up)`,
  async run() {
    await loadPolicyParser();
    const first = checkMigrationSync(MIGRATION);
    if (!first.accepted || first.statements.length !== 5) {
      throw new Error(`the benchmark migration should be accepted with 5 statements: ${JSON.stringify(first)}`);
    }
    for (let i = 0; i < WARMUP; i++) checkMigrationSync(MIGRATION);
    const samples: number[] = [];
    for (let i = 0; i < RUNS; i++) {
      const start = process.hrtime.bigint();
      checkMigrationSync(MIGRATION);
      samples.push(Number(process.hrtime.bigint() - start) / 1e6);
    }
    const p50 = round(percentile(samples, 50), 3);
    const p99 = round(percentile(samples, 99), 3);
    process.stdout.write(`policy check, 5 statements: p50 ${p50} ms, p99 ${p99} ms over ${RUNS} runs\n`);
    return { policy_check_5stmt_p50_ms: p50 };
  },
};
