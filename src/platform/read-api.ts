import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { parseHostPort } from '../contract/host-port';
import type { ReadApiEndpoint } from '../contract/read-api';
import { presentsToken, tokenDigest } from '../process/read-api-token';

/** The worker's read API (src/contract/read-api.ts says why it exists and how clients find it). */
export interface ReadApi extends ReadApiEndpoint {
  close(): Promise<void>;
}

/** What a request without the token is told: nothing of what the API serves, only how to ask. */
export const UNAUTHORIZED_ERROR = "unauthorized: the read API answers Forge's own clients only (Authorization: Bearer <token>)";

/**
 * Serves `routes` (path → a read that resolves to JSON) on `address` (`host:port`) to requests that carry `token` as a
 * bearer token (src/process/read-api-token.ts); any other request, whatever its path or method, gets 401 and nothing
 * else. Resolves once it listens; rejects when it cannot (the address is taken or not local), for the caller to log: the
 * platform works without it.
 */
export function startReadApi(address: string, routes: Record<string, () => Promise<unknown>>, options: { token: string }): Promise<ReadApi> {
  const { host, port } = parseHostPort(address);
  const expected = tokenDigest(options.token);
  const server: Server = createServer((req, res) => {
    const reply = (status: number, body: unknown, headers: Record<string, string> = {}) => {
      res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store', ...headers });
      res.end(JSON.stringify(body));
    };
    // First, before the path is even looked at: a caller without the token learns nothing, not even which reads exist.
    if (!presentsToken(req.headers.authorization, expected)) {
      return reply(401, { error: UNAUTHORIZED_ERROR }, { 'www-authenticate': 'Bearer realm="forge"' });
    }
    const read = routes[new URL(req.url ?? '/', 'http://forge').pathname];
    if (!read) return reply(404, { error: `no such read; the read API serves ${Object.keys(routes).join(', ')}` });
    if (req.method !== 'GET' && req.method !== 'HEAD') return reply(405, { error: 'the read API answers GET only' });
    read().then(
      (body) => reply(200, body),
      (err: Error) => reply(503, { error: err.message }),
    );
  });
  // A client that never sends its request ties up nothing for long.
  server.requestTimeout = 10_000;
  server.headersTimeout = 5_000;
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      const bound = server.address() as AddressInfo;
      const shown = bound.family === 'IPv6' ? `[${bound.address}]` : bound.address;
      resolve({
        url: `http://${shown}:${bound.port}`,
        close: () =>
          new Promise<void>((done) => {
            server.closeAllConnections();
            server.close(() => done());
          }),
      });
    });
  });
}
