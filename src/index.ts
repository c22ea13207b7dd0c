/**
 * `agent-forge`, the package's public entry: what an agent program imports to drive Forge (ForgeClient: deploy, roll
 * back, migrate, promote, read runs) and to load and call the tools it deployed (ToolRegistry), with the types of
 * their inputs, results and verdicts and the errors they throw.
 *
 * Named exports, not `export *`: this list is the published surface, so nothing internal (fault points, search
 * attribute keys, table names) becomes API by accident. Loading it loads the client (gRPC to Temporal) and the
 * registry with its sandbox runner, never the Temporal worker, its native bridge, PGlite, pg or x402
 * (test/sdk/package.test.ts holds it to that; startForge requires them when it is called). `agent-forge/client` and
 * `agent-forge/registry` load one side only.
 */

export {
  ForgeClient,
  type DeployHandle,
  type ForgeClientOptions,
  type OutageEvent,
  type OutageOptions,
  type ProgressListener,
  type PromotionOptions,
  type RunHandle,
  type RunInfo,
  type RunSummary,
} from './client';
export type { TemporalConnectOptions } from './platform/temporal-connection';

// Forge inside this process (client, workers, dev server and database in one program); the worker side loads only
// when startForge is called.
export { startForge, type EmbeddedForge, type StartForgeOptions } from './embedded';

// The registry half, the same names `agent-forge/registry` exports (one list: src/registry/sdk.ts).
export * from './registry/sdk';
export type { SandboxLimits } from './sandbox';

// The errors a caller can meet, each a class to test with `instanceof`.
export { ConfigError, ForgeInputError, PlatformUnreachableError, RunNotFoundError, ScheduleMissingError } from './contract/errors';
export { DevServerError, TemporalBinaryNotFoundError } from './platform/errors';

// The contract: names and their rules, limits, and every run's input, result and verdict.
export { isToolName, TOOL_NAME_PATTERN, TOOL_NAME_RULE } from './contract/tool-name';
export { FORGE_KINDS, RUN_STATUSES, type ForgeKind } from './contract/kinds';
export { MAX_DEPLOY_SOURCE_BYTES, MAX_MIGRATION_SQL_BYTES } from './contract/limits';
export { FailureType, type FailureTypeName } from './contract/failures';
export { canonicalJson, migrationChecksum, toolContentHash } from './contract/hashes';
export type { RunProgress, StageRecord } from './contract/run-progress';
export { SANDBOX_STATUSES, type SandboxDiagnostics, type SandboxStatus, type SandboxVerdict, type SourceLocation } from './contract/sandbox-verdict';
export {
  DEPLOY_STAGES,
  type DeleteToolResult,
  type DeployDiagnostics,
  type DeployStage,
  type DeployToolInput,
  type DeployToolResult,
  type ListToolsResult,
  type RollbackToolResult,
  type ToolRejection,
  type ToolSummary,
  type VerdictSummary,
} from './contract/tool-runs';
export {
  MIGRATE_STAGES,
  MIGRATION_NAME_PATTERN,
  type ListMigrationsResult,
  type MigrateSchemaInput,
  type MigrateSchemaResult,
  type MigrateStage,
  type MigrationFailure,
  type MigrationRejection,
  type MigrationRejectionReason,
  type MigrationSqlError,
  type MigrationStatementDetails,
  type MigrationSummary,
} from './contract/migration-runs';
export type { MigrationProblem, PolicyReport, StatementLocation, StatementVerdict } from './contract/policy-verdict';
export {
  MAX_PROMOTION_BYTES,
  MAX_PROMOTION_FILES,
  PROMOTE_STEPS,
  PROMOTION_STAGES,
  type FailureCategory,
  type PromoteBuiltinInput,
  type PromoteBuiltinResult,
  type PromoteStep,
  type PromotionRejection,
  type PromotionStage,
  type ProposedChange,
  type StageCommandReport,
  type StageLocation,
  type StageReport,
  type StageStatus,
  type VerificationEnvelope,
} from './contract/promotion-runs';
export {
  REVERIFY_ACTIONS,
  type BuiltinReverifyReport,
  type ReverifiedTool,
  type ReverifyAction,
  type ReverifyScheduleInfo,
  type ReverifySummary,
  type ReverifyVerdict,
} from './contract/reverify-runs';
