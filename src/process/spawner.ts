import { spawn, type ChildProcess } from 'node:child_process';
import { EventEmitter } from 'node:events';
import { Duplex, Readable } from 'node:stream';
import { registerProcessHelper } from './process-helpers';
import { withParentDeathSignal } from './setpriv';
import { SpawnerGoneError } from './errors';

/**
 * Starting a process costs the process that starts it time in proportion to its memory: Node on Linux forks (libuv),
 * and fork copies the page tables. A Forge worker holds ~1 GB (the embedded database, Temporal's core), so each
 * process it started took ~20-45 ms of its main thread before the command ran at all (~1-3 ms from a fresh Node); a
 * promotion runs ~45 git commands, each sandbox run or stage starts a contained process tree and removes its
 * directories with `rm -rf`, and a burst of deployments spent a third of the worker's busy main thread in spawn(). So
 * processes are started by a small helper process instead, one per process, started at the first command, in two ways:
 * - {@link spawnThroughHelper}: a short command. The helper runs `execFile` exactly as this process would (same argv,
 *   cwd, environment, input, timeout and kill signal) and sends back stdout, stderr and how the command ended.
 * - {@link spawnRelayed}: a long-lived process whose pipes this process reads and writes (a contained process tree's
 *   launcher, src/sandbox/contained-process.ts). The helper spawns it and relays, over its IPC channel, in order: the
 *   pid, every chunk of fds 1, 2, 4 (and 3 when asked for), the exit, the close; and writes what this process sends
 *   to fd 3. A {@link RelayedChild} stands for it here with the same events as a ChildProcess.
 *
 * The helper lives as long as its parent: it is started with SIGKILL as its parent-death signal (`setpriv --pdeathsig`,
 * where that works), and the launchers it relays have theirs, so a parent killed with SIGKILL takes every contained tree
 * with it through the kernel, while the short commands the helper was running finish as orphans (a git killed half-way
 * can leave a ref's or the index's .lock behind). When its channel closes otherwise, it kills every relayed process's
 * group at once (they served the parent only), lets the short commands finish within their timeouts, then exits. It
 * ignores SIGINT (a Ctrl-C reaches the whole process group; the parent decides when it stops, and its shutdown may
 * still run commands). Idle, it keeps neither process alive. If it dies, the short commands it was running fail as commands that could not finish
 * (infrastructure: the caller retries), its relayed processes die with it and are reported killed, and the next
 * command starts a new helper.
 */
export const HELPER_SOURCE = `
'use strict';
const { execFile, spawn } = require('node:child_process');
const running = new Map();
const relayed = new Map();
process.on('SIGINT', () => undefined);
let orphaned = false;
const maybeExit = () => {
  if (orphaned && running.size === 0 && relayed.size === 0) process.exit(0);
};
const send = (m, cb) => {
  if (!process.connected) return false;
  process.send(m, cb);
  return true;
};
process.on('disconnect', () => {
  orphaned = true;
  // A relayed tree served its parent only: with the parent gone, it is killed at once (its launcher's group; the
  // launcher's pdeathsig would take it down with this process anyway), and what its pipes still hold is drained and
  // dropped, so that their close (and this process's exit) is not held up by a pipe paused for a relay that is gone.
  for (const child of relayed.values()) {
    if (child.pid !== undefined && child.exitCode === null && child.signalCode === null) {
      try { process.kill(-child.pid, 'SIGKILL'); } catch {}
    }
  }
  for (const s of paused) s.resume();
  paused.clear();
  maybeExit();
});
// Bytes relayed to the parent whose writes have not completed: past this, the children's pipes are paused (so a flood
// costs this process a bounded buffer, and the parent, which counts the bytes, gets to kill the tree).
let inFlight = 0;
const paused = new Set();
const HIGH_WATER = 4 * 1024 * 1024;
function relay(id, fd, stream) {
  stream.on('error', () => undefined);
  stream.on('data', (chunk) => {
    inFlight += chunk.length;
    const sent = send({ id, ev: 'data', fd, data: chunk }, () => {
      inFlight -= chunk.length;
      if (inFlight < HIGH_WATER / 2) for (const s of paused) { paused.delete(s); s.resume(); }
    });
    if (!sent) inFlight -= chunk.length;
    else if (inFlight >= HIGH_WATER) { paused.add(stream); stream.pause(); }
  });
}
function spawnRelayed(m) {
  let child;
  try {
    child = spawn(m.command, m.args, { cwd: m.cwd, env: m.env, stdio: ['ignore', 'pipe', 'pipe', 'pipe', 'pipe'], detached: m.detached, windowsHide: true });
  } catch (error) {
    send({ id: m.id, ev: 'error', message: error.message, code: error.code });
    return;
  }
  relayed.set(m.id, child);
  child.once('spawn', () => send({ id: m.id, ev: 'spawn', pid: child.pid }));
  child.on('error', (error) => send({ id: m.id, ev: 'error', message: error.message, code: error.code }));
  // fd 3 is relayed only when asked for; otherwise this end is closed (the launcher closes the command's).
  if (!m.channel) child.stdio[3].destroy();
  for (const fd of m.channel ? [1, 2, 3, 4] : [1, 2, 4]) relay(m.id, fd, child.stdio[fd]);
  child.once('exit', (code, signal) => send({ id: m.id, ev: 'exit', code, signal }));
  child.once('close', () => {
    relayed.delete(m.id);
    for (const fd of [1, 2, 3, 4]) paused.delete(child.stdio[fd]);
    send({ id: m.id, ev: 'close' });
    maybeExit();
  });
}
process.on('message', (m) => {
  if (m.op === 'spawn') return spawnRelayed(m);
  if (m.op === 'write') {
    const fd3 = relayed.get(m.id)?.stdio[3];
    if (fd3 && !fd3.destroyed) fd3.write(m.data);
    return;
  }
  let child;
  try {
    child = execFile(m.file, m.args, {
      cwd: m.cwd, env: m.env, encoding: 'buffer', maxBuffer: m.maxBuffer, timeout: m.timeout,
      killSignal: 'SIGKILL', windowsHide: true,
    }, (error, stdout, stderr) => {
      running.delete(m.id);
      const failure = error ? { code: error.code, signal: error.signal == null ? null : error.signal, message: error.message } : null;
      send({ id: m.id, stdout, stderr, error: failure });
      maybeExit();
    });
  } catch (error) {
    send({ id: m.id, stdout: Buffer.alloc(0), stderr: Buffer.alloc(0), error: { code: error.code, signal: null, message: error.message } });
    return;
  }
  running.set(m.id, child);
  if (child.stdin) {
    child.stdin.on('error', () => undefined);
    child.stdin.end(m.input == null ? '' : m.input);
  }
});
`;

export interface SpawnRequest {
  file: string;
  args: readonly string[];
  cwd: string;
  env: NodeJS.ProcessEnv;
  input?: string | Buffer;
  maxBuffer: number;
  timeout: number;
}

export interface SpawnOutcome {
  stdout: Buffer;
  stderr: Buffer;
  /** Null when the command exited 0; else what execFile's error said (`code`: the exit code, or a string like ENOENT). */
  error: { code: number | string | undefined; signal: string | null; message: string } | null;
}

interface Pending {
  resolve(outcome: SpawnOutcome): void;
  reject(err: Error): void;
}

class Spawner {
  private readonly pending = new Map<number, Pending>();
  private readonly relayed = new Map<number, RelayedChild>();
  private nextId = 1;

  constructor(private readonly child: ChildProcess) {
    child.on('message', (m: ({ id: number } & SpawnOutcome) | RelayEvent) => {
      if ('ev' in m) return this.onRelayEvent(m);
      const p = this.pending.get(m.id);
      if (!p) return;
      this.pending.delete(m.id);
      this.refWhileBusy();
      p.resolve({ stdout: Buffer.from(m.stdout), stderr: Buffer.from(m.stderr), error: m.error });
    });
    const gone = (why: string) => {
      if (current === this) current = undefined;
      const err = new SpawnerGoneError(`the spawn helper process ${why} before the command ended`);
      for (const p of this.pending.values()) p.reject(err);
      this.pending.clear();
      for (const r of this.relayed.values()) r.helperGone(err);
      this.relayed.clear();
      this.refWhileBusy();
    };
    child.on('error', (err) => gone(`failed (${err.message})`));
    child.on('exit', (code, signal) => gone(`exited (${signal ?? `code ${code}`})`));
    this.refWhileBusy();
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  /**
   * Closes the channel: the helper kills what it relays, lets its short commands finish, then exits (see above).
   * Resolves when it has exited, or after {@link STOP_WAIT_MS} if a short command still runs (it exits after that one).
   */
  stop(): Promise<void> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return Promise.resolve();
    return new Promise((resolve) => {
      const waited = setTimeout(resolve, STOP_WAIT_MS).unref();
      this.child.once('exit', () => {
        clearTimeout(waited);
        resolve();
      });
      if (this.child.connected) this.child.disconnect();
      else this.child.kill('SIGKILL');
    });
  }

  run(request: SpawnRequest): Promise<SpawnOutcome> {
    return new Promise((resolve, reject) => {
      const id = this.nextId++;
      this.pending.set(id, { resolve, reject });
      this.refWhileBusy();
      const message = { id, ...request, args: [...request.args] };
      try {
        this.child.send(message, (err) => {
          if (!err || !this.pending.delete(id)) return;
          this.refWhileBusy();
          reject(new SpawnerGoneError(`the spawn helper process could not take the command: ${err.message}`));
        });
      } catch (err) {
        this.pending.delete(id);
        this.refWhileBusy();
        reject(new SpawnerGoneError(`the spawn helper process could not take the command: ${(err as Error).message}`));
      }
    });
  }

  spawnRelayed(request: RelayedSpawnRequest): RelayedChild {
    const id = this.nextId++;
    const relayed = new RelayedChild((message) => this.sendRelay({ id, ...message }), request.channel);
    this.relayed.set(id, relayed);
    this.refWhileBusy();
    this.sendRelay({ id, op: 'spawn', ...request, args: [...request.args] }, (err) => {
      this.relayed.delete(id);
      this.refWhileBusy();
      relayed.helperGone(new SpawnerGoneError(`the spawn helper process could not take the command: ${err.message}`));
    });
    return relayed;
  }

  private sendRelay(message: object, onError: (err: Error) => void = () => undefined): void {
    try {
      this.child.send(message, (err) => err && onError(err));
    } catch (err) {
      onError(err as Error);
    }
  }

  private onRelayEvent(m: RelayEvent): void {
    const relayed = this.relayed.get(m.id);
    if (!relayed) return;
    relayed.onEvent(m);
    if (m.ev === 'close' || (m.ev === 'error' && relayed.pid === undefined)) {
      this.relayed.delete(m.id);
      this.refWhileBusy();
    }
  }

  /** The helper keeps this process alive only while it runs commands for it, as the commands themselves would. */
  private refWhileBusy(): void {
    const channel = this.child.channel as { ref?(): void; unref?(): void } | undefined;
    if (this.pending.size > 0 || this.relayed.size > 0) {
      this.child.ref();
      channel?.ref?.();
    } else {
      this.child.unref();
      channel?.unref?.();
    }
  }
}

let current: Spawner | undefined;

/** How long {@link stopSpawnHelper} waits for a helper that still runs a short command. */
const STOP_WAIT_MS = 5_000;

function start(): Spawner {
  // With SIGKILL as its parent-death signal: a worker killed with SIGKILL takes the helper with it at once, and so
  // (through their launchers' own pdeathsig) every contained tree it runs; its short commands finish as orphans.
  const [command, args] = withParentDeathSignal(process.execPath, ['-e', HELPER_SOURCE]);
  const child = spawn(command, args, {
    // Nothing of the parent's environment: each command gets its own, explicitly. PATH for execFile's lookup of the command
    // comes with each command's environment too.
    env: {},
    stdio: ['ignore', 'ignore', 'ignore', 'ipc'],
    serialization: 'advanced',
    windowsHide: true,
  });
  return new Spawner(child);
}

/** Ends the helper, if one runs, and resolves once it has exited; the next command starts a new one. */
function stopSpawnHelper(): Promise<void> {
  const spawner = current;
  current = undefined;
  return spawner ? spawner.stop() : Promise.resolve();
}
registerProcessHelper(stopSpawnHelper);

/** The helper's pid, or undefined when none runs (for tests). */
export function helperPid(): number | undefined {
  return current?.pid;
}

/** Runs `file args` through the helper (started now if there is none). @throws SpawnerGoneError */
export function spawnThroughHelper(request: SpawnRequest): Promise<SpawnOutcome> {
  current ??= start();
  return current.run(request);
}

/** What {@link spawnRelayed} starts: `command args` with stdin /dev/null and fds 1-4 pipes. */
export interface RelayedSpawnRequest {
  command: string;
  args: readonly string[];
  cwd: string;
  env: NodeJS.ProcessEnv;
  /** In a new session and process group. */
  detached: boolean;
  /** Relay fd 3 both ways ({@link RelayedChild.channel}); otherwise it is closed. */
  channel: boolean;
}

/** Starts `command` through the helper (started now if there is none); see {@link RelayedChild}. Never throws. */
export function spawnRelayed(request: RelayedSpawnRequest): RelayedChild {
  current ??= start();
  return current.spawnRelayed(request);
}

type RelayEvent =
  | { id: number; ev: 'spawn'; pid: number }
  | { id: number; ev: 'error'; message: string; code?: string }
  | { id: number; ev: 'data'; fd: 1 | 2 | 3 | 4; data: Uint8Array }
  | { id: number; ev: 'exit'; code: number | null; signal: NodeJS.Signals | null }
  | { id: number; ev: 'close' };

/**
 * A process the helper started for this one (see {@link spawnRelayed}), with what the code that supervises it uses of
 * a ChildProcess: `pid` (once `spawned` settled), `exitCode`/`signalCode`, the events `spawn`, `error`, `exit` and
 * `close` (after every pipe has ended), and its pipes: `stdout` (fd 1), `stderr` (fd 2), `stdio[3]` (the channel,
 * writable too) and `stdio[4]`.
 */
export class RelayedChild extends EventEmitter {
  pid: number | undefined;
  exitCode: number | null = null;
  signalCode: NodeJS.Signals | null = null;
  readonly stdout = new Readable({ read() {} });
  readonly stderr = new Readable({ read() {} });
  readonly stdio: [null, Readable, Readable, Duplex | null, Readable];
  /** Settles once the process has a pid, or could not be started. */
  readonly spawned: Promise<void>;
  private markSpawned: () => void = () => undefined;
  private closed = false;

  constructor(
    private readonly send: (message: object) => void,
    channel: boolean,
  ) {
    super();
    this.spawned = new Promise<void>((r) => (this.markSpawned = r));
    const fd3 = channel
      ? new Duplex({
          read() {},
          write: (chunk: Buffer, _encoding, callback) => {
            this.send({ op: 'write', data: chunk });
            callback();
          },
        })
      : null;
    this.stdio = [null, this.stdout, this.stderr, fd3, new Readable({ read() {} })];
  }

  /** @internal What the helper said about it. */
  onEvent(m: RelayEvent): void {
    switch (m.ev) {
      case 'spawn':
        this.pid = m.pid;
        this.markSpawned();
        this.emit('spawn');
        return;
      case 'data':
        if (!this.closed) this.stdio[m.fd]?.push(Buffer.from(m.data.buffer, m.data.byteOffset, m.data.byteLength));
        return;
      case 'exit':
        return this.exited(m.code, m.signal);
      case 'error':
        this.markSpawned();
        this.emit('error', Object.assign(new Error(m.message), { code: m.code }));
        if (this.pid === undefined) this.end(); // never started: nothing more will come
        return;
      case 'close':
        return this.end();
    }
  }

  /** @internal The helper died (or refused the request): so did the process, through its launcher's pdeathsig. */
  helperGone(err: Error): void {
    if (this.closed) return;
    this.markSpawned();
    if (this.pid === undefined) this.emit('error', err);
    else {
      this.stderr.push(`forge-sandbox: ${err.message}; the process died with it\n`);
      this.exited(null, 'SIGKILL');
    }
    this.end();
  }

  private exited(code: number | null, signal: NodeJS.Signals | null): void {
    if (this.exitCode !== null || this.signalCode !== null) return;
    this.exitCode = code;
    this.signalCode = signal;
    this.emit('exit', code, signal);
  }

  /** Ends every pipe, then (once what they hold was handed on) says `close`, as a ChildProcess does. */
  private end(): void {
    if (this.closed) return;
    this.closed = true;
    for (const stream of this.stdio) stream?.push(null);
    setImmediate(() => this.emit('close', this.exitCode, this.signalCode));
  }
}
