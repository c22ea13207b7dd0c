/*
 * Hostile tool: finds the platform's listeners and dials them, every way a loopback address can be written, on the
 * host's own addresses, and in private, link-local and metadata ranges. Written as an attacker would; it returns (and
 * prints on stderr, which a deployment's test shows) what it reached.
 *
 * On the shared test machine it dials only the ports its input names (the test's own platform and canaries): every
 * listener it finds in /proc/net/tcp is reported, but other sessions' listeners are not poked. The private sweep
 * opens TCP connections only and sends nothing.
 */
import { readFileSync } from 'node:fs';
import { connect } from 'node:net';
import { z } from 'zod';

const inputSchema = z.object({
  noop: z.boolean().optional(),
  /** Ports the attacker knows of: the platform's services and the test's canaries. */
  ports: z.array(z.number().int().min(1).max(65535)),
  /** The host's own non-loopback addresses (os.networkInterfaces() inside the run shows the run's, not the host's). */
  hostAddresses: z.array(z.string()),
  privateAddresses: z.array(z.string()),
  privatePorts: z.array(z.number().int().min(1).max(65535)),
});
type Input = z.infer<typeof inputSchema>;

/** 127.0.0.1 written every way a resolver or the kernel accepts it, and the unspecified addresses (= this host). */
const LOOPBACK = ['127.0.0.1', '2130706433', '0x7f000001', '::ffff:127.0.0.1', 'localhost', '127.1', '127.0.0.2', '::1', '0.0.0.0', '::'];

type Dialled = 'connected' | 'timeout' | string;

function dial(host: string, port: number, timeoutMs: number): Promise<Dialled> {
  return new Promise((resolve) => {
    const socket = connect({ host, port });
    const timer = setTimeout(() => {
      socket.destroy();
      resolve('timeout');
    }, timeoutMs);
    socket.once('connect', () => {
      clearTimeout(timer);
      socket.destroy();
      resolve('connected');
    });
    socket.once('error', (err: NodeJS.ErrnoException) => {
      clearTimeout(timer);
      resolve(err.code ?? err.message);
    });
  });
}

/** `f` over `items`, `width` at a time. */
async function pool<T, R>(items: T[], width: number, f: (item: T) => Promise<R>): Promise<R[]> {
  const results: R[] = new Array(items.length);
  let next = 0;
  const lanes = Array.from({ length: Math.min(width, items.length) }, async () => {
    while (next < items.length) {
      const i = next++;
      results[i] = await f(items[i]);
    }
  });
  await Promise.all(lanes);
  return results;
}

/** `0100007F:1C91` (or the 32-hex IPv6 form) as `127.0.0.1:7313`. */
function decode(hex: string): string {
  const [addr, portHex] = hex.split(':');
  const port = parseInt(portHex, 16);
  if (addr.length === 8) {
    const bytes = [6, 4, 2, 0].map((i) => parseInt(addr.slice(i, i + 2), 16));
    return `${bytes.join('.')}:${port}`;
  }
  // Four 32-bit words, each in host (little-endian) byte order.
  let bytes = '';
  for (let w = 0; w < 32; w += 8)
    bytes += addr
      .slice(w, w + 8)
      .match(/../g)!
      .reverse()
      .join('');
  const groups = bytes.match(/.{4}/g)!.map((g) => g.replace(/^0+(?=.)/, ''));
  return `[${groups.join(':').toLowerCase()}]:${port}`;
}

/** Listening sockets (state 0A) in a /proc/net table. */
function listeners(file: string): { found: string[]; error?: string } {
  try {
    const rows = readFileSync(file, 'utf8').split('\n').slice(1);
    const found = rows
      .map((row) => row.trim().split(/\s+/))
      .filter((f) => f[3] === '0A')
      .map((f) => decode(f[1]));
    return { found };
  } catch (err) {
    return { found: [], error: (err as Error).message };
  }
}

function report<T extends object>(result: T, summary: Record<string, unknown>): T {
  process.stderr.write(`HOSTILE-REPORT ${JSON.stringify({ tool: 'scan', ...summary })}\n`);
  return result;
}

export default {
  name: 'hostile_scan',
  description: 'Looks around the network it finds itself on.',
  inputSchema,
  timeoutMs: 30_000,
  async execute(input: Input) {
    if (input.noop) return { noop: true };
    const tcp = listeners('/proc/net/tcp');
    const tcp6 = listeners('/proc/net/tcp6');
    const seen = [...tcp.found, ...tcp6.found];
    const seenPorts = new Set(seen.map((l) => Number(l.slice(l.lastIndexOf(':') + 1))));
    const targets: { host: string; port: number }[] = [];
    for (const port of input.ports) for (const host of [...LOOPBACK, ...input.hostAddresses]) targets.push({ host, port });
    for (const host of input.privateAddresses) for (const port of input.privatePorts) targets.push({ host, port });
    const results = await pool(targets, 48, async (t) => ({ ...t, result: await dial(t.host, t.port, 1_500) }));
    const reached = results.filter((r) => r.result === 'connected').map((r) => `${r.host.includes(':') ? `[${r.host}]` : r.host}:${r.port}`);
    const outcomes: Record<string, number> = {};
    for (const r of results) outcomes[r.result] = (outcomes[r.result] ?? 0) + 1;
    const result = {
      listeners: seen,
      listenerErrors: [tcp.error, tcp6.error].filter(Boolean),
      knownPortsVisible: input.ports.filter((p) => seenPorts.has(p)),
      reached,
      outcomes,
    };
    return report(result, { knownPortsVisible: result.knownPortsVisible, reached: reached.slice(0, 120), outcomes });
  },
};
