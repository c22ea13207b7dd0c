import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, chownSync, copyFileSync, existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { ForgeClient } from '../../src/client';
import { findFreePort } from '../../src/process/free-port';
import { requireTemporalBinary } from '../../src/platform/temporal-binary';
import { viemAccounts } from '../../src/x402/viem';
import { stopForgeUp } from '../cli/forge-up';
import { cliEnv, FORGE_BIN, ROOT, runCommand, type CliResult } from '../cli/run-cli';

/**
 * A real `forge up` for the hostile corpus, as issue 24 attacked it: its own dev server (gRPC and Web UI), worker,
 * read API, metrics and, with FORGE_X402_DEV=1, the local chain, token, facilitator and seller, run by root or by an
 * ordinary user. The worker's environment carries the wallet key and a secret of the test's, for the corpus to look
 * for; FORGE_HOME is left for Forge to create, so it has the modes Forge gives it.
 */
export interface HostilePlatform {
  /** Who runs the platform: `root`, or the ordinary user's name. */
  user: string;
  uid: number;
  gid: number;
  /** A scratch directory of the test's (0755, the platform user's), holding FORGE_HOME and the worktree root. */
  scratch: string;
  home: string;
  agentToolsDir: string;
  agentRepo: string;
  temporalAddress: string;
  temporalPort: number;
  /** What forge up said it serves (a service the defence moves or closes is absent). */
  urls: { ui?: string; metrics?: string; readApi?: string; seller?: string; anvil?: string; facilitator?: string };
  x402: { wallet: string; token?: string; rpcUrl?: string };
  walletKey: `0x${string}`;
  /** A value only the worker's environment holds. */
  envSecret: string;
  /** The read API's bearer token (FORGE_API_TOKEN): the platform's clients have it, tools must not. */
  apiToken: string;
  /** The test's own Temporal client (outside every sandbox). */
  client: Client;
  forge: ForgeClient;
  /** Runs `forge ...args` as the platform's user, pointed at this platform. */
  cli(args: string[], timeoutMs?: number): Promise<CliResult>;
  /** Everything forge up printed so far. */
  output(): string;
  stop(): Promise<void>;
}

/** The ordinary user the non-root cases run as (CI runs as root and may create it). */
export const ORDINARY_USER = 'forgeuser';

/** uid and gid of `name`, creating the user (`useradd -m`) when it is missing and this process is root. */
function ensureUser(name: string): { uid: number; gid: number } {
  let id = spawnSync('id', ['-u', name], { encoding: 'utf8' });
  if (id.status !== 0) {
    if (process.getuid?.() !== 0) throw new Error(`there is no user ${name}, and only root may create it`);
    const made = spawnSync('useradd', ['-m', name], { encoding: 'utf8' });
    if (made.status !== 0) throw new Error(`useradd -m ${name} failed: ${made.stderr}`);
    id = spawnSync('id', ['-u', name], { encoding: 'utf8' });
  }
  const gid = spawnSync('id', ['-g', name], { encoding: 'utf8' });
  return { uid: Number(id.stdout.trim()), gid: Number(gid.stdout.trim()) };
}

/** `command args` as `user` (setpriv, with that user's groups), or as is for root. */
function asUser(user: string, command: string, args: string[]): [string, string[]] {
  if (user === 'root') return [command, args];
  return ['setpriv', ['--reuid', user, '--regid', user, '--init-groups', '--', command, ...args]];
}

const grab = (text: string, re: RegExp) => re.exec(text)?.[1];

/**
 * Starts `forge up` (FORGE_X402_DEV=1) as `user` (`root`: this process's own user), and resolves once it is up. The
 * platform's state lives in a scratch directory of the test's, removed by stop().
 */
export async function startHostilePlatform(user: string, env: NodeJS.ProcessEnv = {}): Promise<HostilePlatform> {
  const { uid, gid } = user === 'root' ? { uid: 0, gid: 0 } : ensureUser(user);
  const scratch = mkdtempSync(path.join(existsSync('/dev/shm') ? '/dev/shm' : tmpdir(), 'forge-hostile-'));
  spawnSync('chmod', ['0755', scratch]);
  if (user !== 'root') chownSync(scratch, uid, gid);
  const home = path.join(scratch, 'home');
  // The temporal CLI the setup installed lives under the project's .forge, which setup makes private to its user
  // (issue 24): another user gets a copy of its own, first on its PATH.
  const binDir = path.join(scratch, 'bin');
  if (user !== 'root') {
    mkdirSync(binDir, { mode: 0o755 });
    copyFileSync(requireTemporalBinary(), path.join(binDir, 'temporal'));
    chmodSync(path.join(binDir, 'temporal'), 0o755);
  }
  const walletKey = viemAccounts.generatePrivateKey();
  const envSecret = `HOSTILE_SECRET_worker_env_${randomBytes(8).toString('hex')}`;
  const apiToken = `HOSTILE_SECRET_api_token_${randomBytes(8).toString('hex')}`;
  const temporalPort = await findFreePort();
  const metricsPort = await findFreePort();
  const uiPort = await findFreePort();
  const platformEnv = cliEnv({
    HOME: user === 'root' ? process.env.HOME : `/home/${user}`,
    FORGE_HOME: home,
    FORGE_AGENT_TOOLS_DIR: path.join(home, 'agent-tools'),
    FORGE_TEMPORAL_PORT: String(temporalPort),
    FORGE_UI_PORT: String(uiPort),
    FORGE_METRICS_ADDRESS: `127.0.0.1:${metricsPort}`,
    FORGE_PROMOTE_WORKTREE_ROOT: path.join(scratch, 'worktrees'),
    FORGE_X402_DEV: '1',
    FORGE_X402_WALLET_KEY: walletKey,
    HOSTILE_WORKER_SECRET: envSecret,
    FORGE_API_TOKEN: apiToken,
    ...(user === 'root' ? {} : { PATH: `${binDir}:${process.env.PATH ?? '/usr/local/bin:/usr/bin:/bin'}` }),
    ...env,
  });
  const [command, args] = asUser(user, process.execPath, [FORGE_BIN, 'up']);
  const child: ChildProcess = spawn(command, args, { env: platformEnv, cwd: ROOT, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout!.on('data', (c: Buffer) => (output += c.toString()));
  child.stderr!.on('data', (c: Buffer) => (output += c.toString()));
  const held: { connection?: Connection } = {};
  const stop = async () => {
    await held.connection?.close().catch(() => undefined);
    await stopForgeUp(child, home);
    rmSync(scratch, { recursive: true, force: true });
  };
  const deadline = Date.now() + 90_000;
  while (!output.includes('Forge is up.')) {
    if (child.exitCode !== null || child.signalCode !== null || Date.now() > deadline) {
      await stop();
      throw new Error(`forge up (as ${user}) did not come up:\n${output}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  const temporalAddress = `127.0.0.1:${temporalPort}`;
  const connection = await Connection.connect({ address: temporalAddress });
  held.connection = connection;
  const client = new Client({ connection, namespace: 'default' });
  const urls: HostilePlatform['urls'] = {
    ui: grab(output, /Web UI: (\S+)/),
    metrics: grab(output, /Prometheus metrics at (\S+)\/metrics/),
    readApi: grab(output, /read API at (https?:\/\/\S+)/),
    seller: grab(output, /selling \d+ tool\(s\) at (\S+?)\/tools\//),
    anvil: grab(output, /x402 dev network at (\S+)/),
  };
  const x402 = {
    wallet: viemAccounts.privateKeyToAccount(walletKey).address,
    token: grab(output, /token \S+ at (0x[0-9a-fA-F]{40})/),
    rpcUrl: urls.anvil,
  };
  // The facilitator is named only by the read API (when the test may still read it).
  if (urls.readApi) {
    try {
      const res = await fetch(`${urls.readApi}/v1/x402`, { headers: { authorization: `Bearer ${apiToken}` }, signal: AbortSignal.timeout(3_000) });
      const info = (await res.json()) as { facilitatorUrl?: string };
      urls.facilitator = info.facilitatorUrl;
    } catch {
      // a read API that does not answer the test either
    }
  }
  const forge = ForgeClient.fromClient(client, { env: { FORGE_HOME: home }, address: temporalAddress });
  const clientEnv = { ...platformEnv, TEMPORAL_ADDRESS: temporalAddress };
  return {
    user,
    uid,
    gid,
    scratch,
    home,
    agentToolsDir: path.join(home, 'agent-tools'),
    agentRepo: path.join(home, 'agent-repo'),
    temporalAddress,
    temporalPort,
    urls,
    x402,
    walletKey,
    envSecret,
    apiToken,
    client,
    forge,
    cli: (cliArgs, timeoutMs = 60_000) => {
      const [cmd, argv] = asUser(user, process.execPath, [FORGE_BIN, ...cliArgs]);
      return runCommand(cmd, argv, { env: clientEnv, timeoutMs });
    },
    output: () => output,
    stop,
  };
}
