export { checkMigration, checkMigrationSync } from './check-migration';
export { MAX_MIGRATION_BYTES, MAX_MIGRATION_STATEMENTS } from '../contract/migration-limits';
export { migrationChecksum } from './checksum';
export { ParserNotLoadedError } from './errors';
export { AGENT_PREFIX, MAX_IDENTIFIER_BYTES } from './names';
export { isPolicyParserLoaded, loadPolicyParser } from './parser';
export type { MigrationProblem, PolicyOptions, PolicyReport, StatementLocation, StatementVerdict } from './types';
