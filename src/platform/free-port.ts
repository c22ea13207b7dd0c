import { createServer } from 'node:net';

/**
 * A TCP port that was free on `host` a moment ago (the OS picks it). Another process can take it before the caller
 * binds it, so use it for tests and retries, not as a reservation.
 */
export function findFreePort(host = '127.0.0.1'): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.once('error', reject);
    server.listen(0, host, () => {
      const address = server.address();
      server.close(() => {
        if (address && typeof address === 'object') resolve(address.port);
        else reject(new Error('could not read the port the OS assigned'));
      });
    });
  });
}

/** Whether `port` can be bound on `host` right now (false when another process listens there). */
export function isPortFree(port: number, host = '127.0.0.1'): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.unref();
    server.once('error', () => resolve(false));
    server.listen(port, host, () => server.close(() => resolve(true)));
  });
}
