export { FORGE_SEARCH_ATTRIBUTES, processGroupAlive, startDevServer } from './dev-server';
export type { DevServer, DevServerOptions } from './dev-server';
export { DevServerError, PlatformUnreachableError, TemporalBinaryNotFoundError } from './errors';
export { findFreePort, isPortFree } from './free-port';
export { findTemporalBinary, requireTemporalBinary, temporalBinarySearchPath } from './temporal-binary';
export {
  connectClient,
  connectWorkerConnection,
  isUnreachableError,
  resolveTemporalConnection,
  toPlatformError,
} from './temporal-connection';
export type { ResolvedTemporalConnection, TemporalConnectOptions, WorkerConnection } from './temporal-connection';
