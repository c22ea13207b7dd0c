import { createServer, type Server } from 'node:net';
import { networkInterfaces } from 'node:os';

/**
 * Listeners of the test's own on the host, the network half of "checked from outside the sandbox": every connection
 * one of them accepts while a hostile tool runs reached the host (loopback, the host's own addresses), whatever the
 * tool says about it. One on 127.0.0.1, one on ::1, and one on every address (`::`, dual-stack: the host's own
 * addresses, IPv4 and IPv6, and loopback).
 */
export class Canaries {
  private accepted: string[] = [];

  private constructor(
    private readonly servers: Server[],
    readonly ports: { loopback: number; loopback6: number; any: number },
  ) {}

  static async start(): Promise<Canaries> {
    const servers: Server[] = [];
    const accepted: string[] = [];
    const listen = (host: string) =>
      new Promise<number>((resolve, reject) => {
        const server = createServer((socket) => {
          accepted.push(`${host} <- ${socket.remoteAddress}:${socket.remotePort}`);
          socket.destroy();
        });
        server.once('error', reject);
        server.listen(0, host, () => resolve((server.address() as { port: number }).port));
        servers.push(server);
      });
    const ports = { loopback: await listen('127.0.0.1'), loopback6: await listen('::1'), any: await listen('::') };
    const canaries = new Canaries(servers, ports);
    canaries.accepted = accepted;
    return canaries;
  }

  /** Every connection accepted so far, `listener <- peer`. */
  connections(): string[] {
    return [...this.accepted];
  }

  list(): number[] {
    return Object.values(this.ports);
  }

  async close(): Promise<void> {
    await Promise.all(this.servers.map((s) => new Promise((r) => s.close(r))));
  }
}

/** The host's own non-loopback addresses (link-local IPv6 left out: it needs a scope to be dialled). */
export function hostAddresses(): string[] {
  return Object.values(networkInterfaces())
    .flat()
    .filter((a): a is NonNullable<typeof a> => !!a && !a.internal && !a.address.toLowerCase().startsWith('fe80'))
    .map((a) => a.address);
}

/** Private, shared-address, link-local and metadata addresses a tool must not reach. */
export const PRIVATE_ADDRESSES = ['10.0.0.1', '172.16.0.1', '192.168.0.1', '169.254.169.254', '100.64.0.1'];
