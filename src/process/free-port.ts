import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';

/** Lowest port we hand out: clear of the well-known and most registered service ports. */
const LOWEST_PORT = 20_000;

/** The kernel's ephemeral range (where `listen(0)` and outgoing connections take their ports); Linux default if unreadable. */
function ephemeralPortRange(): { low: number; high: number } {
  try {
    const [low, high] = readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/).map(Number);
    if (Number.isInteger(low) && Number.isInteger(high) && low > LOWEST_PORT + 1_000) return { low, high };
  } catch {
    // Not Linux, or /proc is not mounted: use the default below.
  }
  return { low: 32_768, high: 60_999 };
}

/**
 * A TCP port that was free on `host` a moment ago, chosen at random BELOW the kernel's ephemeral range. Another
 * process can still take it before the caller binds it, so use it for tests and retries, not as a reservation.
 *
 * Why not `listen(0)`: that hands out an ephemeral port, and the Temporal dev server picks its own internal ports
 * (history, matching, worker services) the same way before its frontend binds; the two picks can coincide, and the
 * server then dies with "address already in use" on a port we were told was free. Below the ephemeral range neither
 * the kernel nor any `listen(0)` will hand our port to someone else.
 */
export async function findFreePort(host = '127.0.0.1'): Promise<number> {
  const { low } = ephemeralPortRange();
  for (let attempt = 0; attempt < 100; attempt++) {
    const port = LOWEST_PORT + Math.floor(Math.random() * (low - LOWEST_PORT));
    if (await isPortFree(port, host)) return port;
  }
  throw new Error(`no free port found on ${host} between ${LOWEST_PORT} and ${low - 1} in 100 tries`);
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
