/**
 * What every layer of Forge shares: names and their rules, limits, kinds, failure types, the inputs and results of
 * every run, content hashes, and the errors a client sees. Nothing here imports Node, esbuild, a database or the
 * Temporal worker, and nothing here imports another part of Forge: values flow down from here.
 */
export * from './errors';
export * from './failures';
export * from './fault-points';
export * from './forge-tables';
export * from './hashes';
export * from './kinds';
export * from './limits';
export * from './migration-runs';
export * from './never-reachable';
export * from './policy-verdict';
export * from './promotion-runs';
export * from './reverify-runs';
export * from './run-progress';
export * from './sandbox-verdict';
export * from './search-attributes';
export * from './tool-name';
export * from './tool-runs';
export * from './workflow-task-timeout';
