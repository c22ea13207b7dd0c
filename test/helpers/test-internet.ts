/**
 * The test's own "internet": a network namespace joined to the host by a veth, whose far end holds TEST-NET-2
 * addresses (public-looking by design, so a run's default network policy reaches them while it reaches nothing of the
 * host's). A server of the test's runs there. Needs root (CI is root).
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';

export interface TestInternet {
  /** The namespace's addresses: the first and the second server address. */
  addresses: [string, string];
  /** The host's own end of the veth (one of the host's own addresses). */
  hostAddress: string;
  stop(): Promise<void>;
}

const sh = (cmd: string, args: string[]) => execFileSync(cmd, args, { stdio: 'pipe' });

/**
 * Makes the namespace and starts `serverSource` (CommonJS run by this Node inside it; it prints a line once it
 * listens). Each call makes a namespace and a veth of its own, on one /24 of 198.51.100.0 (the same for every call:
 * run one at a time per host address, which jest's one worker per file in CI does).
 */
export async function startTestInternet(serverSource: string): Promise<TestInternet> {
  const id = randomBytes(3).toString('hex');
  const ns = `forge-inet-${id}`;
  const hostIf = `fih${id}`;
  const nsIf = `fin${id}`;
  const hostAddress = '198.51.100.1';
  const addresses: [string, string] = ['198.51.100.10', '198.51.100.11'];
  sh('ip', ['netns', 'add', ns]);
  sh('ip', ['link', 'add', hostIf, 'type', 'veth', 'peer', 'name', nsIf, 'netns', ns]);
  sh('ip', ['addr', 'add', `${hostAddress}/24`, 'dev', hostIf]);
  sh('ip', ['link', 'set', hostIf, 'up']);
  for (const a of addresses) sh('ip', ['-n', ns, 'addr', 'add', `${a}/24`, 'dev', nsIf]);
  sh('ip', ['-n', ns, 'link', 'set', nsIf, 'up']);
  sh('ip', ['-n', ns, 'link', 'set', 'lo', 'up']);
  const server: ChildProcess = spawn('ip', ['netns', 'exec', ns, process.execPath, '-e', serverSource], { stdio: ['ignore', 'pipe', 'inherit'] });
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
