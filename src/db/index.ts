export {
  applyAgentMigration,
  completeAgentMigration,
  coreLockTimeoutMs,
  getAgentMigration,
  isConnectionSqlState,
  listAgentMigrations,
  postgresErrorOf,
} from './agent-migrations';
export { buildIndexOnline, dropInvalidIndex, lockHolders } from './online-index';
export type { OnlineIndexInput, OnlineIndexProgress, OnlineIndexResult } from './online-index';
export type {
  AgentMigration,
  AgentMigrationState,
  ApplyAgentMigrationInput,
  ApplyAgentMigrationOutcome,
  MigrationLimits,
  MigrationStatement,
  PostgresErrorFields,
} from './agent-migrations';
export { TOOLS_CHANNEL } from './channels';
export { readCoreTableUsage } from './core-table-usage';
export { DatabaseOpenError, MigrationError, MigrationStatementError, ToolVersionNotFoundError } from './errors';
export { migrationsFolder } from './migrate';
export { openDatabase } from './open-database';
export { openPglite } from './pglite';
export { openPostgres } from './postgres';
export * as tables from './schema';
export { createToolStore } from './tool-store';
export type {
  ActivationResult,
  ActiveTool,
  CommitVersionResult,
  DeactivationResult,
  InsertVersionResult,
  NewEvent,
  NewToolVersion,
  QuarantineRequest,
  QuarantineResult,
  RemovalResult,
  ToolEvent,
  ToolQuarantine,
  ToolStore,
  ToolVersion,
  WorkflowRef,
} from './tool-store';
export { createReverifyStore } from './reverify-store';
export type { NewReverifyResult, ReverifyCandidate, ReverifyResultRow, ReverifyStore } from './reverify-store';
export type { ForgeDatabase, ForgeDb, ForgeTx, NotificationListener } from './types';
