import { createMigrationActivities } from '../../src/activities/migration-activities';
import type { ForgeDatabase } from '../../src/db';
import { migrationChecksum } from '../../src/policy';
import { LEDGER_MIGRATION_NAME, LEDGER_MIGRATION_SQL } from '../../src/x402/ledger';

/**
 * Creates the x402 ledger the way Forge does: the migration activities' own validate (the schema policy) and apply
 * (one transaction, as the agent role on PostgreSQL), called without Temporal in front.
 */
export async function applyLedgerMigration(database: ForgeDatabase, runId = 'setup') {
  const activities = createMigrationActivities({ database, schema: database.schema, limits: { lockTimeoutMs: 2_000, statementTimeoutMs: 30_000 } });
  const input = { name: LEDGER_MIGRATION_NAME, sql: LEDGER_MIGRATION_SQL, checksum: migrationChecksum(LEDGER_MIGRATION_SQL) };
  const validated = await activities.validateMigration({ ...input, runId });
  const applied = await activities.applyMigration({ ...input, workflowId: `schema-migrate/${LEDGER_MIGRATION_NAME}`, runId });
  return { validated, applied };
}
