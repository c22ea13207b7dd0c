import type * as Activities from '../../../src/activities/migration-activities';
import type * as Policy from '../../../src/policy';
import type { PolicyReport } from '../../../src/policy';
import type { ActivitiesFactory } from './harness';

/**
 * `createMigrationActivities` with the judge's verdict overridden to "accepted" (statements still split by it): the
 * self-tests of the differential harnesses plant harmful migrations this way, since the judge is being hardened and
 * today's bypasses cannot be relied on to reach the database.
 */
export async function permissiveActivities(): Promise<ActivitiesFactory> {
  let factory: ActivitiesFactory | undefined;
  jest.isolateModules(() => {
    jest.doMock('../../../src/policy', () => {
      const actual = jest.requireActual<typeof Policy>('../../../src/policy');
      const accept = (r: PolicyReport): PolicyReport => ({ accepted: true, statements: r.statements.map((s) => ({ ...s, accepted: true })) });
      return {
        ...actual,
        checkMigration: async (text: string, opts?: Policy.PolicyOptions) => accept(await actual.checkMigration(text, opts)),
        checkMigrationSync: (text: string, opts?: Policy.PolicyOptions) => accept(actual.checkMigrationSync(text, opts)),
      };
    });
    // requireActual loads the activities themselves as they are; their own import of the policy gets the mock above.
    factory = jest.requireActual<typeof Activities>('../../../src/activities/migration-activities').createMigrationActivities;
  });
  jest.dontMock('../../../src/policy');
  if (!factory) throw new Error('could not load the migration activities');
  return factory;
}
