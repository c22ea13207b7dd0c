import type { CoreColumnFacts, CoreTablesUsage } from '../../../src/policy';

const column = (type: string, length: number, appIndexed = false, typmod = -1): CoreColumnFacts => ({ type, length, typmod, appIndexed });
const numeric12_2 = column('numeric', -1, false, ((12 << 16) | 2) + 4);

/**
 * What the migration activity reads of core-fixture.sql's tables before judging (readCoreTableUsage), for the tests
 * that judge the corpus without a database: the caps count nothing yet, and the index-width rule knows the columns.
 * test/policy/core-index-width.test.ts checks it against the catalog of both backends.
 */
export const FIXTURE_CORE_TABLES: CoreTablesUsage = {
  users: {
    agentColumns: 0,
    agentIndexes: 0,
    columns: {
      id: column('int4', 4, true),
      email: column('text', -1, true), // UNIQUE: the application's own index bounds it already
      name: column('text', -1),
      active: column('bool', 1),
      created_at: column('timestamptz', 8),
    },
  },
  orders: {
    agentColumns: 0,
    agentIndexes: 0,
    columns: {
      id: column('int8', 8, true),
      user_id: column('int4', 4),
      total: numeric12_2,
      status: column('text', -1),
      placed_at: column('timestamptz', 8),
    },
  },
  products: {
    agentColumns: 0,
    agentIndexes: 0,
    columns: { sku: column('text', -1, true), title: column('text', -1), price: numeric12_2 },
  },
};
