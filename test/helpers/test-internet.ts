/**
 * The test's own "internet": a network namespace joined to the host by a veth, whose far end holds TEST-NET-2
 * addresses (public-looking by design, so a run's default network policy reaches them while it reaches nothing of the
 * host's). A server of the test's runs there. Needs root (CI is root).
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { networkInterfaces } from 'node:os';

export interface TestInternet {
  /** The namespace's addresses: the first and the second server address. */
  addresses: [string, string];
  /** The host's own end of the veth (one of the host's own addresses). */
  hostAddress: string;
  stop(): Promise<void>;
}

const sh = (cmd: string, args: string[]) => execFileSync(cmd, args, { stdio: 'pipe' });

/**
 * Makes the namespace and starts the server `serverSource(addresses)` gives (CommonJS run by this Node inside it, to
 * listen on those addresses; it prints a line once it listens). Each call makes a namespace and a veth of its own.
 */
export async function startTestInternet(serverSource: (addresses: [string, string]) => string): Promise<TestInternet> {
  const id = randomBytes(3).toString('hex');
  const ns = `forge-inet-${id}`;
  const hostIf = `fih${id}`;
  const nsIf = `fin${id}`;
  // A /28 of TEST-NET-2 no interface of this host holds yet (test files run two at a time; egress.test.ts has .0/28).
  const taken = new Set(
    Object.values(networkInterfaces())
      .flat()
      .map((i) => i?.address),
  );
  const base = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15].map((i) => 16 * i).find((b) => !taken.has(`198.51.100.${b + 1}`));
  if (base === undefined) throw new Error('no free /28 of 198.51.100.0/24 for a test internet');
  const hostAddress = `198.51.100.${base + 1}`;
  const addresses: [string, string] = [`198.51.100.${base + 10}`, `198.51.100.${base + 11}`];
  sh('ip', ['netns', 'add', ns]);
  sh('ip', ['link', 'add', hostIf, 'type', 'veth', 'peer', 'name', nsIf, 'netns', ns]);
  sh('ip', ['addr', 'add', `${hostAddress}/28`, 'dev', hostIf]);
  sh('ip', ['link', 'set', hostIf, 'up']);
  for (const a of addresses) sh('ip', ['-n', ns, 'addr', 'add', `${a}/28`, 'dev', nsIf]);
  sh('ip', ['-n', ns, 'link', 'set', nsIf, 'up']);
  sh('ip', ['-n', ns, 'link', 'set', 'lo', 'up']);
  const server: ChildProcess = spawn('ip', ['netns', 'exec', ns, process.execPath, '-e', serverSource(addresses)], { stdio: ['ignore', 'pipe', 'inherit'] });
  await once(server.stdout!, 'data');
  return {
    addresses,
    hostAddress,
    async stop() {
      server.kill('SIGKILL');
      try {
        sh('ip', ['link', 'del', hostIf]);
      } catch {
        // Gone with the namespace already.
      }
      sh('ip', ['netns', 'del', ns]);
    },
  };
}
