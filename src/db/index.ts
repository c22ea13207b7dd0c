export {
  applyAgentMigration,
  completeAgentMigration,
  coreLockTimeoutMs,
  getAgentMigration,
  isConnectionSqlState,
  listAgentMigrations,
  postgresErrorOf,
} from './agent-migrations';
export { buildIndexOnline, lockHolders } from './online-index';
export type { AgentMigration, MigrationLimits } from './agent-migrations';
export { TOOLS_CHANNEL } from './channels';
export { readCoreTableUsage } from './core-table-usage';
export { MigrationStatementError } from './errors';
export { openDatabase } from './open-database';
export { openPglite } from './pglite';
export * as tables from './schema';
export { createToolStore } from './tool-store';
export type { ActiveFingerprint, ToolQuarantine, ToolStore, ToolVersion } from './tool-store';
export { createReverifyStore } from './reverify-store';
export type { ReverifyResultRow, ReverifyStore } from './reverify-store';
export type { ForgeDatabase } from './types';
