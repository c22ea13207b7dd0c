export { checkMigration, checkMigrationSync } from './check-migration';
export { migrationChecksum } from './checksum';
export { ParserNotLoadedError } from './errors';
export { AGENT_PREFIX, MAX_IDENTIFIER_BYTES } from './names';
export { isPolicyParserLoaded, loadPolicyParser } from './parser';
export type { PolicyOptions, PolicyReport, StatementLocation, StatementVerdict } from './types';
