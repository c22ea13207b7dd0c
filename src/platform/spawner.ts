import { spawn, type ChildProcess } from 'node:child_process';

/**
 * Starting a process costs the process that starts it time in proportion to its memory: Node on Linux forks (libuv),
 * and fork copies the page tables. A Forge worker holds ~1 GB (the embedded database, Temporal's core), so each
 * command it started took ~20-45 ms before the command ran at all (~3 ms from a fresh Node); a promotion runs ~45 git
 * commands, and each sandbox run or stage removes its directories with `rm -rf`. So these short commands are started
 * by a small helper process instead, one per process, started at the first command: the request goes over its IPC
 * channel, the helper runs `execFile` exactly as this process would (same argv, cwd, environment, input, timeout and
 * kill signal) and sends back stdout, stderr and how the command ended. (A contained process is not started here: its
 * containment needs the worker as its parent, for pdeathsig and its pipes.)
 *
 * The helper lives as long as its parent: when the channel closes (the parent exited or was killed) it lets the
 * commands it still runs finish, within their timeouts, as they would have without it (a git killed half-way can
 * leave a ref's or the index's .lock behind), then exits. It ignores SIGINT (a Ctrl-C reaches the whole process group; the parent
 * decides when it stops, and its shutdown may still run commands). Idle, it keeps neither process alive. If it dies,
 * the commands it was running fail as commands that could not finish (infrastructure: the caller retries), and the
 * next command starts a new helper.
 */
export const HELPER_SOURCE = `
'use strict';
const { execFile } = require('node:child_process');
const running = new Map();
process.on('SIGINT', () => undefined);
let orphaned = false;
process.on('disconnect', () => {
  orphaned = true;
  if (running.size === 0) process.exit(0);
});
process.on('message', (m) => {
  let child;
  try {
    child = execFile(m.file, m.args, {
      cwd: m.cwd, env: m.env, encoding: 'buffer', maxBuffer: m.maxBuffer, timeout: m.timeout,
      killSignal: 'SIGKILL', windowsHide: true,
    }, (error, stdout, stderr) => {
      running.delete(m.id);
      if (orphaned && running.size === 0) process.exit(0);
      const failure = error ? { code: error.code, signal: error.signal == null ? null : error.signal, message: error.message } : null;
      if (process.connected) process.send({ id: m.id, stdout, stderr, error: failure });
    });
  } catch (error) {
    if (process.connected) process.send({ id: m.id, stdout: Buffer.alloc(0), stderr: Buffer.alloc(0), error: { code: error.code, signal: null, message: error.message } });
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

/** Thrown for a command whose helper went away before it answered: whether the command ran is unknown. */
export class SpawnerGoneError extends Error {
  override readonly name = 'SpawnerGoneError';
}

interface Pending {
  resolve(outcome: SpawnOutcome): void;
  reject(err: Error): void;
}

class Spawner {
  private readonly pending = new Map<number, Pending>();
  private nextId = 1;

  constructor(private readonly child: ChildProcess) {
    child.on('message', (m: { id: number } & SpawnOutcome) => {
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
      this.refWhileBusy();
    };
    child.on('error', (err) => gone(`failed (${err.message})`));
    child.on('exit', (code, signal) => gone(`exited (${signal ?? `code ${code}`})`));
    this.refWhileBusy();
  }

  get pid(): number | undefined {
    return this.child.pid;
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

  /** The helper keeps this process alive only while it runs commands for it, as the commands themselves would. */
  private refWhileBusy(): void {
    const channel = this.child.channel as { ref?(): void; unref?(): void } | undefined;
    if (this.pending.size > 0) {
      this.child.ref();
      channel?.ref?.();
    } else {
      this.child.unref();
      channel?.unref?.();
    }
  }
}

let current: Spawner | undefined;

function start(): Spawner {
  const child = spawn(process.execPath, ['-e', HELPER_SOURCE], {
    // Nothing of the parent's environment: each command gets its own, explicitly. PATH for execFile's lookup of the command
    // comes with each command's environment too.
    env: {},
    stdio: ['ignore', 'ignore', 'ignore', 'ipc'],
    serialization: 'advanced',
    windowsHide: true,
  });
  return new Spawner(child);
}

/** The helper's pid, or undefined when none runs (for tests). */
export function helperPid(): number | undefined {
  return current?.pid;
}

/** Runs `file args` through the helper (started now if there is none). @throws SpawnerGoneError */
export function spawnThroughHelper(request: SpawnRequest): Promise<SpawnOutcome> {
  current ??= start();
  return current.run(request);
}
