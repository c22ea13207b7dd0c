import { Client, Connection, isGrpcServiceError, type ClientOptions } from '@temporalio/client';
import { loadClientConnectConfig, type ClientConnectConfig } from '@temporalio/envconfig';
import { PlatformUnreachableError } from '../contract/errors';

/*
 * The client side of reaching Temporal: what the SDK (src/client.ts) and the CLI load. Nothing here may import
 * @temporalio/worker (test/contract/import-graph.test.ts holds it to that); the worker's connection is in
 * worker-connection.ts.
 */

/** How to reach Temporal; everything not given comes from `@temporalio/envconfig` (env vars, then config file). */
export interface TemporalConnectOptions {
  /** Overrides TEMPORAL_ADDRESS / the profile's address, e.g. the dev server `forge up` just started. */
  address?: string;
  /** Overrides TEMPORAL_NAMESPACE / the profile's namespace. */
  namespace?: string;
  /** Profile in the Temporal config file (default: TEMPORAL_PROFILE, else "default"). */
  profile?: string;
  /** Environment to read instead of the process's own (tests). */
  env?: NodeJS.ProcessEnv;
  /** How long the client waits for the server before giving up (default 5 s). */
  connectTimeoutMs?: number;
}

/** The connection settings envconfig resolved, with the SDK's defaults filled in. */
export interface ResolvedTemporalConnection {
  address: string;
  namespace: string;
  connectionOptions: ClientConnectConfig['connectionOptions'];
}

const DEFAULT_ADDRESS = 'localhost:7233';
const DEFAULT_NAMESPACE = 'default';
// The client's own default is 10 s; a CLI that cannot reach its platform should say so sooner.
const DEFAULT_CONNECT_TIMEOUT_MS = 5_000;

/** Loads the standard Temporal client configuration (TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE, TEMPORAL_API_KEY, ...). */
export function resolveTemporalConnection(options: TemporalConnectOptions = {}): ResolvedTemporalConnection {
  const overrideEnvVars =
    options.env === undefined ? undefined : Object.fromEntries(Object.entries(options.env).filter((e): e is [string, string] => e[1] !== undefined));
  const loaded = loadClientConnectConfig({ profile: options.profile, overrideEnvVars });
  const address = options.address ?? loaded.connectionOptions.address ?? DEFAULT_ADDRESS;
  return {
    address,
    namespace: options.namespace ?? loaded.namespace ?? DEFAULT_NAMESPACE,
    connectionOptions: { ...loaded.connectionOptions, address },
  };
}

/**
 * True for errors that mean "nothing answered at that address" (refused, DNS failure, deadline while connecting,
 * gRPC UNAVAILABLE), as opposed to a server that answered with an error.
 */
export function isUnreachableError(err: unknown): boolean {
  if (err instanceof PlatformUnreachableError) return true;
  if (isGrpcServiceError(err)) return err.code === 14; // UNAVAILABLE
  if (err instanceof Error) {
    if (/Failed to connect before the deadline|ECONNREFUSED|EHOSTUNREACH|ENOTFOUND/.test(err.message)) return true;
    if (err.cause !== undefined && err.cause !== err) return isUnreachableError(err.cause);
  }
  return false;
}

/**
 * The search attribute a Temporal error says the namespace has no mapping for (a start: "Namespace default has no
 * mapping defined for search attribute ForgeStage"; a list query: "invalid search attribute: ForgeStage"), or
 * undefined for any other error. The server answers INVALID_ARGUMENT (3) either way.
 */
export function missingSearchAttributeOf(err: unknown): string | undefined {
  for (let e: unknown = err, depth = 0; e instanceof Error && depth < 5; e = e.cause, depth++) {
    if (isGrpcServiceError(e) && e.code !== 3) return undefined;
    const text = `${e.message} ${(e as { details?: unknown }).details ?? ''}`;
    const match = /no mapping defined for search attribute (\w+)|invalid search attribute: (\w+)/.exec(text);
    if (match) return match[1] ?? match[2];
  }
  return undefined;
}

/** Wraps an unreachable-type error in a PlatformUnreachableError with one clear sentence; returns others as is. */
export function toPlatformError(err: unknown, address: string): unknown {
  if (err instanceof PlatformUnreachableError || !isUnreachableError(err)) return err;
  return platformUnreachable(address, err);
}

/** The one sentence Forge says when nothing answers at the Temporal address. */
export function platformUnreachable(address: string, cause: unknown): PlatformUnreachableError {
  return new PlatformUnreachableError(
    `Cannot reach the Temporal service at ${address}: start it with \`forge up\`, or set TEMPORAL_ADDRESS (and TEMPORAL_NAMESPACE / TEMPORAL_API_KEY) to a running one.`,
    address,
    { cause },
  );
}

/**
 * Connects a Temporal client with the standard environment configuration, passing the namespace on.
 * Close it with `client.connection.close()`.
 * @throws PlatformUnreachableError when no server answers at the configured address.
 */
export async function connectClient(
  options: TemporalConnectOptions = {},
  clientOptions: Omit<ClientOptions, 'connection' | 'namespace'> = {},
): Promise<Client> {
  const resolved = resolveTemporalConnection(options);
  let connection: Connection;
  try {
    connection = await Connection.connect({
      ...resolved.connectionOptions,
      connectTimeout: options.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS,
    });
  } catch (err) {
    throw toPlatformError(err, resolved.address);
  }
  return new Client({ ...clientOptions, connection, namespace: resolved.namespace });
}
