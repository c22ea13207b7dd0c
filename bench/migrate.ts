import { createMigrationActivities } from '../src/activities/migration-activities';
import { migrationChecksum } from '../src/policy';
import { p50p95, percentile, round, statsRow, timeMs } from './stats';
import { startBenchPlatform } from './platform';
import type { Bench } from './types';
import { startNoopWorkflow } from './noop';

const RUNS = Number(process.env.BENCH_RUNS ?? 30);

/** A small, typical agent migration: a table and an index on it. Each run gets its own names. */
const migration = (table: string) => `CREATE TABLE ${table} (
  id bigserial PRIMARY KEY,
  user_id bigint NOT NULL,
  body text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX ${table}_user_idx ON ${table} (user_id, created_at);
`;

/**
 * A schema migration two ways, interleaved, on embedded PGlite: durable (client start → `applied`, through the dev
 * server and the workers: validate, apply, record) and the direct transaction alone (the same SQL through the apply
 * activity's function, policy check included, no Temporal). Distinct names every run, so each one really applies.
 */
export const migrateBench: Bench = {
  name: 'migrate',
  description: `schema migration: durable (client → applied) vs the direct transaction (${RUNS} runs each, PGlite)`,
  async run() {
    const { config, database, forge, address, stop } = await startBenchPlatform('migrate');
    const noop = await startNoopWorkflow(address);
    try {
      const steps = createMigrationActivities({ database, schema: config.database.schema, limits: config.migrations });
      const durable = async (i: number) => {
        const r = await forge.migrateSchema({ name: `bench_durable_${i}`, sql: migration(`agent_bench_durable_${i}`) });
        if (r.status !== 'applied') throw new Error(`durable run ${i}: ${r.status}: ${r.message}`);
      };
      const direct = async (i: number) => {
        const sql = migration(`agent_bench_direct_${i}`);
        const name = `bench_direct_${i}`;
        const r = await steps.applyMigration({ name, sql, checksum: migrationChecksum(sql), workflowId: 'bench-direct', runId: name });
        if (r.status !== 'applied') throw new Error(`direct run ${i}: ${r.status}`);
      };

      for (let i = 0; i < 3; i++) {
        await durable(-1 - i + 1000);
        await direct(-1 - i + 1000);
        await noop.run();
      }
      const samples = { durable: [] as number[], direct: [] as number[], noop: [] as number[] };
      for (let i = 0; i < RUNS; i++) {
        samples.durable.push(await timeMs(() => durable(i)));
        samples.direct.push(await timeMs(() => direct(i)));
        samples.noop.push(await timeMs(noop.run));
      }
      console.log(statsRow('durable (client → applied)', samples.durable, 30));
      console.log(statsRow('direct transaction', samples.direct, 30));
      const ratio = round(percentile(samples.durable, 50) / percentile(samples.direct, 50));
      console.log(statsRow('no-op workflow (Temporal)', samples.noop, 30));
      const overhead = round((percentile(samples.durable, 50) - percentile(samples.direct, 50)) / percentile(samples.noop, 50));
      console.log(`durable / direct (p50): ${ratio}×; (durable − direct) / no-op workflow: ${overhead} (goal ≤ 1.5)`);
      return {
        migrate_overhead_vs_noop_workflow_p50: overhead,
        ...p50p95('migrate_noop_workflow', samples.noop),
        migrate_durable_vs_direct_p50: ratio,
        ...p50p95('migrate_durable', samples.durable),
        ...p50p95('migrate_direct', samples.direct),
      };
    } finally {
      await noop.stop();
      await stop();
    }
  },
};
