import { spawn, type ChildProcess } from 'node:child_process';
import { withParentDeathSignal } from '../process/setpriv';
import { createWriteStream, mkdirSync } from 'node:fs';
import path from 'node:path';
import { Connection } from '@temporalio/client';
import { FORGE_SEARCH_ATTRIBUTES } from '../contract/search-attributes';
import { PRIVATE_DIR_MODE, PRIVATE_FILE_MODE } from '../contract/private-modes';
import { DevServerError } from './errors';
import { isPortFree } from '../process/free-port';
import { requireTemporalBinary } from './temporal-binary';

export interface DevServerOptions {
  /** FORGE_HOME: the SQLite file (`temporal.sqlite`) and the server log (`temporal-server.log`) live here. */
  home: string;
  /** Frontend gRPC port (FORGE_TEMPORAL_PORT). */
  port: number;
  /** Web UI port (FORGE_UI_PORT). */
  uiPort: number;
  /** Interface to bind; loopback by default because the dev server has no authentication. */
  ip?: string;
  /** Namespace that must answer before the server counts as ready (always created). */
  namespace?: string;
  /** The temporal CLI; by default the one setup installed (findTemporalBinary). */
  binary?: string;
  /** How long to wait for the server to answer (default 30 s). */
  readyTimeoutMs?: number;
  /** Server log level (default warn). */
  logLevel?: 'debug' | 'info' | 'warn' | 'error';
}

/** A running dev server that this process started. */
export interface DevServer {
  /** gRPC address for clients and workers, e.g. `127.0.0.1:7233`. */
  address: string;
  uiUrl: string;
  namespace: string;
  /** Process id of the server, also the id of its process group. */
  pid: number;
  /** Where its output goes. */
  logFile: string;
  /** Stops the server and everything in its process group; resolves once it exited. Idempotent. */
  stop(): Promise<void>;
}

const TAIL_LINES = 40;
const STOP_GRACE_MS = 10_000;

/** Keeps the last lines of the server's output for error messages. */
class OutputTail {
  private lines: string[] = [];
  private partial = '';
  push(chunk: Buffer): void {
    const parts = (this.partial + chunk.toString('utf8')).split('\n');
    this.partial = parts.pop() ?? '';
    this.lines.push(...parts);
    if (this.lines.length > TAIL_LINES) this.lines = this.lines.slice(-TAIL_LINES);
  }
  toString(): string {
    return [...this.lines, this.partial].filter((l) => l.trim() !== '').join('\n');
  }
}

function exitOf(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => child.once('exit', () => resolve()));
}

function killGroup(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pid, signal);
  } catch {
    // ESRCH: the group is already gone.
  }
}

/** True while any process of the group still exists. */
export function processGroupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

async function waitUntilReady(address: string, namespace: string, deadline: number, exited: () => boolean): Promise<void> {
  let lastError: unknown;
  while (Date.now() < deadline && !exited()) {
    let connection: Connection | undefined;
    try {
      connection = await Connection.connect({ address, connectTimeout: 1_000 });
      // The namespace answering means the server finished its own start-up (system namespaces, search attributes).
      await connection.workflowService.describeNamespace({ namespace });
      return;
    } catch (err) {
      lastError = err;
      await new Promise((r) => setTimeout(r, 100));
    } finally {
      await connection?.close().catch(() => undefined);
    }
  }
  throw lastError ?? new Error('server exited');
}

/**
 * Starts `temporal server start-dev` with its state in `$FORGE_HOME/temporal.sqlite` (so runs survive a restart)
 * and Forge's search attributes, in its own process group, and waits until the namespace answers.
 * A start-up that dies on a collision of the server's own internal ports is retried (up to three starts in all).
 * @throws DevServerError with the server's last output when it exits early or does not answer in time.
 */
export async function startDevServer(options: DevServerOptions): Promise<DevServer> {
  const ip = options.ip ?? '127.0.0.1';
  for (let attempt = 1; ; attempt++) {
    // Checked up front (and before each retry): otherwise the readiness probe could be answered by whatever already
    // listens there.
    for (const [name, port] of [
      ['gRPC', options.port],
      ['Web UI', options.uiPort],
    ] as const) {
      if (!(await isPortFree(port, ip))) {
        throw new DevServerError(
          `Cannot start the Temporal dev server: the ${name} port ${ip}:${port} is already in use (set FORGE_TEMPORAL_PORT / FORGE_UI_PORT, or stop what listens there).`,
          '',
        );
      }
    }
    try {
      return await startDevServerOnce(options, ip);
    } catch (err) {
      // The server picks its internal service ports (history, matching, worker) itself, as free ephemeral ports,
      // before anything binds; another process can take one in between, or the pick can even equal our own frontend
      // port. That start-up dies with "address already in use" and says nothing about our ports: a fresh start
      // picks again.
      const internalPortRace = err instanceof DevServerError && /address already in use/.test(err.outputTail);
      if (!internalPortRace || attempt >= START_ATTEMPTS) throw err;
    }
  }
}

/** Start-ups that die on an internal port collision are retried this many times in all. */
const START_ATTEMPTS = 3;

async function startDevServerOnce(options: DevServerOptions, ip: string): Promise<DevServer> {
  const namespace = options.namespace ?? 'default';
  const binary = options.binary ?? requireTemporalBinary();
  mkdirSync(options.home, { recursive: true, mode: PRIVATE_DIR_MODE });
  const logFile = path.join(options.home, 'temporal-server.log');
  const dbFile = path.join(options.home, 'temporal.sqlite');
  const args = [
    'server',
    'start-dev',
    '--db-filename',
    dbFile,
    '--ip',
    ip,
    '--port',
    String(options.port),
    '--ui-port',
    String(options.uiPort),
    '--namespace',
    namespace,
    '--log-level',
    options.logLevel ?? 'warn',
    '--ui-disable-news-fetch', // no network beyond this machine is assumed
    ...Object.entries(FORGE_SEARCH_ATTRIBUTES).flatMap(([key, type]) => ['--search-attribute', `${key}=${type}`]),
  ];
  // setpriv execs the server in place (same pid, same group) with a parent-death signal: if this process is killed
  // with SIGKILL and cannot stop the server, the kernel kills the server instead of leaving it orphaned on its ports.
  const [command, argv] = withParentDeathSignal(binary, args);
  // Every run's history is in the server's SQLite file (tools' sources and inputs included), which it would create with
  // the umask's mode (0644). Spawned with umask 077, all it creates is this user's alone. (It cannot be created private
  // beforehand: the server sets its schema up only in a file it creates.) process.umask is process-wide, but spawn forks
  // synchronously: the mask is restored before any other JavaScript runs, and a file another thread creates meanwhile
  // only comes out more private.
  const umask = process.umask(0o077);
  let child: ChildProcess;
  try {
    child = spawn(command, argv, {
      // Own process group: stop() signals the group, so nothing the server spawned outlives it.
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
  } finally {
    process.umask(umask);
  }
  const tail = new OutputTail();
  const log = createWriteStream(logFile, { flags: 'a', mode: PRIVATE_FILE_MODE });
  log.on('error', () => undefined); // a full disk must not crash the platform over a log line
  for (const stream of [child.stdout, child.stderr]) {
    stream?.on('data', (chunk: Buffer) => {
      tail.push(chunk);
      log.write(chunk);
    });
  }
  const spawned = new Promise<void>((resolve, reject) => {
    child.once('spawn', resolve);
    child.once('error', reject);
  });
  const exited = exitOf(child);
  let hasExited = false;
  void exited.then(() => {
    hasExited = true;
  });

  let stopping: Promise<void> | undefined;
  const stop = (): Promise<void> => {
    stopping ??= (async () => {
      const pid = child.pid;
      if (pid !== undefined && !hasExited) {
        killGroup(pid, 'SIGTERM');
        const timer = setTimeout(() => killGroup(pid, 'SIGKILL'), STOP_GRACE_MS);
        await exited;
        clearTimeout(timer);
      }
      // The server is gone; take down anything left in its group too.
      if (pid !== undefined) killGroup(pid, 'SIGKILL');
      await new Promise<void>((resolve) => log.end(resolve));
    })();
    return stopping;
  };

  try {
    await spawned;
  } catch (err) {
    await stop();
    throw new DevServerError(`Could not start ${binary}: ${String(err)}`, '', { cause: err });
  }
  const address = `${ip}:${options.port}`;
  try {
    await waitUntilReady(address, namespace, Date.now() + (options.readyTimeoutMs ?? 30_000), () => hasExited);
  } catch (err) {
    const why = hasExited
      ? `The Temporal dev server exited during start-up (code ${child.exitCode ?? child.signalCode}).`
      : `The Temporal dev server did not answer at ${address} in time.`;
    await stop();
    throw new DevServerError(`${why} Its log: ${logFile}`, tail.toString(), { cause: err });
  }
  return {
    address,
    uiUrl: `http://${ip}:${options.uiPort}`,
    namespace,
    pid: child.pid as number,
    logFile,
    stop,
  };
}
