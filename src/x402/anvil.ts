import { spawn, type ChildProcess } from 'node:child_process';
import { withParentDeathSignal } from '../process/setpriv';
import { createRequire } from 'node:module';
import { LocalNetworkError } from './errors';

/**
 * The local EVM is Foundry's anvil from the npm registry: `@foundry-rs/anvil` depends on one package per platform
 * (`@foundry-rs/anvil-linux-amd64`, ...) that ships the binary itself, so it installs with no download of its own
 * (the wrapper's postinstall, which would fetch that same package from the registry when the optional dependency is
 * missing, is not allowed to run: package.json allowScripts). It starts in ~50 ms and holds ~20 MB, in its own
 * process, so a worker's event loop never runs the EVM.
 */
const PLATFORM_PACKAGES: Record<string, string | undefined> = {
  'linux-x64': '@foundry-rs/anvil-linux-amd64',
  'linux-arm64': '@foundry-rs/anvil-linux-arm64',
  'darwin-x64': '@foundry-rs/anvil-darwin-amd64',
  'darwin-arm64': '@foundry-rs/anvil-darwin-arm64',
  'win32-x64': '@foundry-rs/anvil-win32-amd64',
};

/** The anvil binary installed for this platform. @throws LocalNetworkError when there is none. */
function anvilBinary(): string {
  const pkg = PLATFORM_PACKAGES[`${process.platform}-${process.arch}`];
  if (!pkg) throw new LocalNetworkError(`anvil has no npm package for ${process.platform}-${process.arch}`);
  const binary = process.platform === 'win32' ? 'anvil.exe' : 'anvil';
  try {
    return createRequire(__filename).resolve(`${pkg}/bin/${binary}`);
  } catch (err) {
    throw new LocalNetworkError(`${pkg} is not installed (an optional dependency of @foundry-rs/anvil): run npm install`, '', {
      cause: err,
    });
  }
}

export interface AnvilOptions {
  chainId: number;
  /** Interface to bind; loopback, since the node signs for anyone (anvil_* methods). */
  host?: string;
  /** How long to wait for anvil to listen (default 15 s). */
  readyTimeoutMs?: number;
  /**
   * A file the chain lives in across restarts (`anvil --state`): loaded at start when it exists, written on exit
   * (SIGTERM, which is also what anvil gets when the process that started it dies) and every `stateIntervalSeconds`.
   * Unset: the chain keeps nothing on disk.
   */
  stateFile?: string;
  /** How often the state file is rewritten while anvil runs (default 1 s): what a SIGKILL of anvil itself may lose. */
  stateIntervalSeconds?: number;
}

/** A running anvil that this process started. */
export interface AnvilProcess {
  rpcUrl: string;
  pid: number;
  /** Stops anvil (its whole process group); resolves once it exited. Idempotent. */
  stop(): Promise<void>;
}

const TAIL_LINES = 40;
const STOP_GRACE_MS = 5_000;

function killGroup(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pid, signal);
  } catch {
    // ESRCH: already gone.
  }
}

function exitOf(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => child.once('exit', () => resolve()));
}

/**
 * Starts anvil on a port the kernel picks (`--port 0`: no race with another process for a "free" port) and resolves
 * with its RPC URL once it prints where it listens. No dev accounts (`--accounts 0`): every key of the local network
 * comes from generatePrivateKey(), and gas money is set with anvil_setBalance. Each block is mined when a
 * transaction arrives (anvil's default automine), so a settlement's receipt is there at once.
 * @throws LocalNetworkError with anvil's last output when it exits early or does not listen in time.
 */
export async function startAnvil(options: AnvilOptions): Promise<AnvilProcess> {
  const host = options.host ?? '127.0.0.1';
  const binary = anvilBinary();
  const args = ['--host', host, '--port', '0', '--chain-id', String(options.chainId), '--accounts', '0'];
  if (options.stateFile) {
    args.push('--state', options.stateFile, '--state-interval', String(options.stateIntervalSeconds ?? 1));
  }
  // setpriv execs anvil in place with a parent-death signal: a SIGKILLed test or worker leaves no node behind. A chain
  // kept on disk gets SIGTERM rather than SIGKILL, on which anvil writes its state before it exits.
  const [command, argv] = withParentDeathSignal(binary, args, options.stateFile ? 'TERM' : 'KILL');
  // The state file holds the chain's keys' balances and every transaction: created with umask 077, it is this user's
  // alone (process.umask is process-wide, but spawn forks synchronously: restored before any other JavaScript runs).
  const umask = options.stateFile ? process.umask(0o077) : undefined;
  let child: ChildProcess;
  try {
    child = spawn(command, argv, { detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  } finally {
    if (umask !== undefined) process.umask(umask);
  }
  const exited = exitOf(child);
  let hasExited = false;
  void exited.then(() => {
    hasExited = true;
  });

  // Output is read for as long as anvil runs (a full pipe would block it); only the last lines are kept.
  const tail: string[] = [];
  let partial = '';
  let onLine: ((line: string) => void) | undefined;
  for (const stream of [child.stdout, child.stderr]) {
    stream?.on('data', (chunk: Buffer) => {
      const parts = (partial + chunk.toString('utf8')).split('\n');
      partial = parts.pop() ?? '';
      for (const line of parts) {
        onLine?.(line);
        tail.push(line);
      }
      if (tail.length > TAIL_LINES) tail.splice(0, tail.length - TAIL_LINES);
    });
  }
  const outputTail = (): string => tail.filter((l) => l.trim() !== '').join('\n');

  let stopping: Promise<void> | undefined;
  const stop = (): Promise<void> => {
    stopping ??= (async () => {
      const pid = child.pid;
      if (pid === undefined) return;
      if (!hasExited) {
        killGroup(pid, 'SIGTERM');
        const timer = setTimeout(() => killGroup(pid, 'SIGKILL'), STOP_GRACE_MS);
        await exited;
        clearTimeout(timer);
      }
      killGroup(pid, 'SIGKILL');
    })();
    return stopping;
  };

  const readyTimeoutMs = options.readyTimeoutMs ?? 15_000;
  let timer: NodeJS.Timeout | undefined;
  try {
    const port = await new Promise<number>((resolve, reject) => {
      onLine = (line) => {
        const match = /Listening on [^\s]*:(\d+)/.exec(line);
        if (match) resolve(Number(match[1]));
      };
      child.once('error', reject);
      void exited.then(() => reject(new Error(`anvil exited (code ${child.exitCode ?? child.signalCode})`)));
      timer = setTimeout(() => reject(new Error(`anvil did not listen within ${readyTimeoutMs} ms`)), readyTimeoutMs);
    });
    onLine = undefined;
    // From here a failure shows as anvil not answering; an 'error' event (a failed kill) must not crash the process.
    child.on('error', () => undefined);
    return { rpcUrl: `http://${host}:${port}`, pid: child.pid as number, stop };
  } catch (err) {
    await stop();
    throw new LocalNetworkError(`Could not start anvil (${binary}): ${(err as Error).message}`, outputTail(), { cause: err });
  } finally {
    clearTimeout(timer);
  }
}
