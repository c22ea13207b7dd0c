import { migrationSteps } from './activity-options';
import type { ListMigrationsResult } from '../contract/migration-runs';

/**
 * Reads the applied agent migrations. A workflow rather than a database read in the client, because with embedded
 * PGlite only the worker may open the database.
 */
export async function listMigrationsWorkflow(): Promise<ListMigrationsResult> {
  return migrationSteps.listMigrations.executeWithOptions({ summary: 'read forge_migrations' }, []);
}
