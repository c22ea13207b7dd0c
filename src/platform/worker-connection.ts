import { NativeConnection, TransportError } from '@temporalio/worker';
import { platformUnreachable, resolveTemporalConnection, toPlatformError, type TemporalConnectOptions } from './temporal-connection';

/** A worker's connection and the namespace its workers must be created in (Worker.create takes both). */
export interface WorkerConnection {
  connection: NativeConnection;
  namespace: string;
  address: string;
}

/**
 * Connects a worker's NativeConnection with the standard environment configuration.
 * @throws PlatformUnreachableError when no server answers at the configured address.
 */
export async function connectWorkerConnection(options: TemporalConnectOptions = {}): Promise<WorkerConnection> {
  const resolved = resolveTemporalConnection(options);
  try {
    const connection = await NativeConnection.connect(resolved.connectionOptions);
    return { connection, namespace: resolved.namespace, address: resolved.address };
  } catch (err) {
    // TransportError is the native connection's own "nothing answers there" (a class the client side cannot import).
    throw err instanceof TransportError ? platformUnreachable(resolved.address, err) : toPlatformError(err, resolved.address);
  }
}
