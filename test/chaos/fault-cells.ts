/**
 * The cells of the two chaos files outside the matrix's scenarios that arm FORGE_FAULT_KILL_AT, here rather than in
 * their test files so that test/contract/fault-points.test.ts checks every point they arm fires where it should.
 */

/** online-index-kill.test.ts: a kill around the concurrent build of an index on a core table. */
export interface OnlineIndexKillCell {
  /** `FORGE_FAULT_KILL_AT`'s point, or 'during the build' for the harness's own SIGKILL while the build runs. */
  kill: string;
  /** What buildCoreIndex's step may report, the kill having come where it did. */
  outcomes: Array<'built' | 'present'>;
}

export const ONLINE_INDEX_KILL_CELLS: OnlineIndexKillCell[] = [
  { kill: 'migrateSchemaWorkflow:buildCoreIndex.before', outcomes: ['built'] },
  // The build done, its completion lost: the retry finds the valid index of that name and keeps it.
  { kill: 'migrateSchemaWorkflow:buildCoreIndex.after', outcomes: ['present', 'built'] },
  // Killed from outside while it builds: built again by the retry, or kept when it finished before its session noticed.
  { kill: 'during the build', outcomes: ['built', 'present'] },
  { kill: 'migrateSchemaWorkflow:completeMigration.before', outcomes: ['built'] },
  { kill: 'migrateSchemaWorkflow:completeMigration.after', outcomes: ['built'] },
];

/** sale-kill.test.ts: a kill around one of a sale's two ledger writes. */
export interface SaleKillCell {
  point: string;
  /** Whether the buyer sends the same signed payment again once the fresh worker is up. */
  buyerRetries: boolean;
  /** What the payment must end as. */
  ends: 'settled' | 'failed';
}

export const SALE_KILL_CELLS: SaleKillCell[] = [
  { point: 'sale:reserveSale.before', buyerRetries: true, ends: 'settled' },
  { point: 'sale:reserveSale.after', buyerRetries: true, ends: 'settled' },
  // Reserved, never settled, and the buyer never comes back: only reconciliation can close the row.
  { point: 'sale:reserveSale.after', buyerRetries: false, ends: 'failed' },
  // Settled on the chain, the record never written: the retry finds the nonce used; reconciliation settles the row.
  { point: 'sale:recordSale.before', buyerRetries: true, ends: 'settled' },
  { point: 'sale:recordSale.after', buyerRetries: true, ends: 'settled' },
];
