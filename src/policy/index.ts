export { checkMigration, checkMigrationSync } from './check-migration';
export { MAX_MIGRATION_BYTES, MAX_MIGRATION_STATEMENTS } from '../contract/limits';
export { migrationChecksum } from '../contract/hashes';
export { ParserNotLoadedError } from './errors';
export { AGENT_PREFIX, MAX_IDENTIFIER_BYTES } from './names';
export { isPolicyParserLoaded, loadPolicyParser } from './parser';
export type { MigrationProblem, PolicyOptions, PolicyReport, StatementLocation, StatementVerdict } from './types';
