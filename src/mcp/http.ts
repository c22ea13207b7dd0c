import { createHash, randomUUID, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { isInitializeRequest } from '@modelcontextprotocol/sdk/types.js';
import type { ForgeMcp } from './server';

/** The one path the server answers on, as MCP clients' configurations usually name it. */
export const MCP_HTTP_PATH = '/mcp';
const MAX_BODY_BYTES = 16 * 1024 * 1024;

export interface HttpServeOptions {
  host: string;
  /** 0: the kernel picks one (the returned URL says which). */
  port: number;
  /** Every request must carry `Authorization: Bearer <token>`. */
  token: string;
  /** A session no request has used for this long is closed (a client that went away without DELETE). Default 30 min. */
  idleSessionMs?: number;
}

export interface HttpMcpServer {
  url: string;
  close(): Promise<void>;
}

/**
 * Forge over Streamable HTTP: one MCP session (and one server) per client, a bearer token on every request, and on
 * loopback a Host check so that a web page the operator visits cannot reach it through DNS rebinding.
 */
export async function serveHttp(mcp: ForgeMcp, options: HttpServeOptions): Promise<HttpMcpServer> {
  const sessions = new Map<string, StreamableHTTPServerTransport>();
  /** When each session was last used; a session with a request or stream open (open > 0) is in use, however long. */
  const lastSeen = new Map<string, number>();
  const open = new Map<string, number>();
  const expected = digest(options.token);
  const idleMs = options.idleSessionMs ?? 30 * 60_000;
  const sweep = setInterval(
    () => {
      for (const [id, at] of lastSeen) {
        if (!open.get(id) && Date.now() - at > idleMs)
          void sessions
            .get(id)
            ?.close()
            .catch(() => undefined);
      }
    },
    Math.min(idleMs, 60_000),
  );
  sweep.unref();
  let allowedHosts: Set<string> | undefined;

  const http = createServer((req, res) => {
    handle(req, res).catch((err: unknown) => {
      if (!res.headersSent) reply(res, 500, jsonRpcError(-32603, `internal error: ${(err as Error)?.message ?? String(err)}`));
      else res.end();
    });
  });

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://forge.invalid');
    if (url.pathname !== MCP_HTTP_PATH) return reply(res, 404, jsonRpcError(-32000, `not found: the MCP endpoint is ${MCP_HTTP_PATH}`));
    if (allowedHosts && !allowedHosts.has((req.headers.host ?? '').toLowerCase())) {
      return reply(res, 403, jsonRpcError(-32000, `forbidden: Host ${JSON.stringify(req.headers.host ?? '')} is not this server's`));
    }
    if (!authorized(req.headers.authorization, expected)) {
      res.setHeader('WWW-Authenticate', 'Bearer realm="forge"');
      return reply(res, 401, jsonRpcError(-32001, 'unauthorized: send Authorization: Bearer <FORGE_MCP_TOKEN>'));
    }
    const body = req.method === 'POST' ? await readJson(req) : undefined;
    if (body instanceof Error) return reply(res, 400, jsonRpcError(-32700, `parse error: ${body.message}`));
    const sessionId = req.headers['mcp-session-id'];
    const existing = typeof sessionId === 'string' ? sessions.get(sessionId) : undefined;
    if (existing) {
      const id = sessionId as string;
      // The standalone GET stream (where list_changed travels) stays open while a client listens: that is use too.
      open.set(id, (open.get(id) ?? 0) + 1);
      res.once('close', () => {
        if (!sessions.has(id)) return;
        open.set(id, Math.max(0, (open.get(id) ?? 1) - 1));
        lastSeen.set(id, Date.now());
      });
      return existing.handleRequest(req, res, body);
    }
    if (sessionId !== undefined || req.method !== 'POST' || !isInitializeRequest(body)) {
      // An unknown session (the server restarted, or the session was closed) is 404, which tells a client to start anew.
      return reply(
        res,
        sessionId !== undefined ? 404 : 400,
        jsonRpcError(-32000, sessionId !== undefined ? 'unknown session' : 'no session: send initialize first'),
      );
    }
    const transport: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      onsessioninitialized: (id) => {
        sessions.set(id, transport);
        lastSeen.set(id, Date.now());
      },
    });
    transport.onclose = () => {
      if (!transport.sessionId) return;
      sessions.delete(transport.sessionId);
      lastSeen.delete(transport.sessionId);
      open.delete(transport.sessionId);
    };
    await mcp.createServer().connect(transport);
    await transport.handleRequest(req, res, body);
  }

  await new Promise<void>((resolve, reject) => {
    http.once('error', reject);
    http.listen(options.port, options.host, () => resolve());
  });
  const { port, address } = http.address() as AddressInfo;
  const shownHost = address.includes(':') ? `[${address}]` : address;
  if (isLoopback(options.host)) allowedHosts = new Set([`127.0.0.1:${port}`, `localhost:${port}`, `[::1]:${port}`]);
  return {
    url: `http://${shownHost}:${port}${MCP_HTTP_PATH}`,
    async close() {
      clearInterval(sweep);
      await Promise.all([...sessions.values()].map((t) => t.close().catch(() => undefined)));
      http.closeAllConnections();
      await new Promise<void>((resolve) => http.close(() => resolve()));
    },
  };
}

function digest(token: string): Buffer {
  return createHash('sha256').update(token).digest();
}

/** Compares digests in constant time, so the comparison says nothing of how much of a guess was right. */
function authorized(header: string | undefined, expected: Buffer): boolean {
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header ?? '');
  return match !== null && timingSafeEqual(digest(match[1]), expected);
}

export function isLoopback(host: string): boolean {
  return host === 'localhost' || host === '::1' || /^127\.\d+\.\d+\.\d+$/.test(host);
}

async function readJson(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_BODY_BYTES) return new Error(`the body is over ${MAX_BODY_BYTES} bytes`);
    chunks.push(chunk);
  }
  try {
    return JSON.parse(Buffer.concat(chunks).toString('utf8')) as unknown;
  } catch (err) {
    return err as Error;
  }
}

function jsonRpcError(code: number, message: string) {
  return { jsonrpc: '2.0', error: { code, message }, id: null };
}

function reply(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'Content-Type': 'application/json' }).end(JSON.stringify(body));
}
