import { AsyncLocalStorage } from 'node:async_hooks';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { Worker } from 'node:worker_threads';
import { messages, TransactionAbortedError } from '@electric-sql/pglite';
import type { QueryOptions, Results, RowMode } from '@electric-sql/pglite';
import { StatementBoundError } from './errors';
import type { NotificationListener } from './types';

/*
 * Why a thread: PGlite runs PostgreSQL as WASM in the thread that calls it and ignores `statement_timeout` (single
 * backend, no signals). In the worker's main thread a long statement would block the event loop (heartbeats, other
 * activities, NOTIFY) and could not be stopped. In a thread of its own it can be: `Worker.terminate()` makes V8
 * abandon the running WASM, and a new thread opening the same data directory runs PostgreSQL's crash recovery, which
 * discards the transaction that was open (its WAL never got a commit record). What was committed before is on disk:
 * PGlite writes through to the directory with plain write calls, and the process (so the page cache) lives on.
 * Like any PostgreSQL after a crash, recovery leaves the files the cancelled transaction had written as orphans in
 * the directory (up to what it wrote before its bound).
 *
 * The cost, measured side by side on 2026-11-22 (/dev/shm): a short drizzle select 0.67 → 0.80 ms p50, a
 * transaction of four statements 1.6 → 2.3–2.7 ms p50 (each call is a postMessage round trip, ~0.15 ms with the
 * rows' structured clone); a reopen after a cancellation ~0.5–0.9 s, paid by the next call.
 */

/** What the thread executes (src/db/pglite-thread.cjs). */
type Call =
  { op: 'query'; sql: string; params?: unknown[]; options?: { rowMode?: RowMode; rawTypes: number[] } } | { op: 'exec'; sql: string } | { op: 'close' };

/** Error fields as the thread sends them (its errors cannot cross postMessage as they are). */
type ErrorFields = { message: string; name?: string; stack?: string; code?: string } & Record<string, unknown>;

type ThreadMessage =
  | { ready: true }
  | { startError: ErrorFields }
  | { notification: { channel: string; payload: string } }
  | { id: number; result: unknown }
  | { id: number; error: ErrorFields };

interface PendingCall {
  resolve(value: unknown): void;
  reject(err: unknown): void;
  deadline?: NodeJS.Timeout;
}

/** One started thread; a restart makes a new one, and calls bound to the old one (its transaction) fail. */
interface Thread {
  worker: Worker;
  pending: Map<number, PendingCall>;
  alive: boolean;
}

/** The part of PGlite's Transaction that drizzle uses. */
export interface PgliteThreadTransaction {
  query<T>(sql: string, params?: unknown[], options?: QueryOptions): Promise<Results<T>>;
  exec(sql: string): Promise<Results[]>;
}

let entry: string | undefined;

/**
 * src/db/pglite-thread.cjs: next to this file under ts-jest, and under the package root's src/ when this runs from
 * dist/ (the build compiles .ts only; the Docker image copies src/ as it does for the sandbox's harness).
 */
function threadEntry(): string {
  if (entry) return entry;
  for (let dir = __dirname; ; dir = path.dirname(dir)) {
    const candidate = path.join(dir, 'src', 'db', 'pglite-thread.cjs');
    if (existsSync(candidate)) return (entry = candidate);
    if (path.dirname(dir) === dir) throw new Error(`No src/db/pglite-thread.cjs found above ${__dirname}.`);
  }
}

/** A PostgreSQL-style error, as PGlite throws it, so callers (postgresErrorOf, drizzle) see no difference. */
function databaseError(fields: ErrorFields): Error {
  if (fields.code === undefined) {
    const err = new Error(fields.message);
    if (fields.name) err.name = fields.name;
    if (fields.stack) err.stack = fields.stack;
    return err;
  }
  const { message, name: _name, stack: _stack, ...rest } = fields;
  return Object.assign(new messages.DatabaseError(message, 0, 'error'), rest);
}

/** A call cut off by the thread's end: connection class 08, so callers retry it as a lost connection. */
function connectionLost(code: '08003' | '08006', message: string, cause?: unknown): Error {
  const err = databaseError({ message, code, severity: 'FATAL' });
  if (cause !== undefined) err.cause = cause;
  return err;
}

// Any object: an identity parser returns it as it is, a real one returns something else or throws.
const PROBE = Object.freeze({}) as unknown as string;

/**
 * The options drizzle passes (drizzle-orm/pglite/session.js: `rowMode` and parsers that return the raw text for the
 * date, time and numeric-array types it parses itself) as data the thread can rebuild. Functions cannot cross
 * postMessage, so anything else fails here, loudly, instead of being dropped.
 */
function threadOptions(options: QueryOptions | undefined): Extract<Call, { op: 'query' }>['options'] {
  if (!options) return undefined;
  const { rowMode, parsers = {}, ...rest } = options;
  const unsupported = Object.keys(rest).filter((k) => rest[k as keyof typeof rest] !== undefined);
  if (unsupported.length > 0) {
    throw new TypeError(`PGlite query options ${unsupported.join(', ')} cannot reach the database thread (src/db/pglite-client.ts).`);
  }
  const rawTypes = Object.entries(parsers).map(([oid, parse]) => {
    let identity = false;
    try {
      identity = parse(PROBE, Number(oid)) === PROBE;
    } catch {
      // not an identity function
    }
    if (!identity) {
      throw new TypeError(
        `A PGlite parser for type ${oid} is not the identity function drizzle used to pass; the database thread ` + 'cannot run it (src/db/pglite-client.ts).',
      );
    }
    return Number(oid);
  });
  return { rowMode, rawTypes };
}

/** Whether a PGlite data directory is in memory (nothing on disk to reopen after ending its thread). */
export function isInMemoryDataDir(dataDir: string): boolean {
  return dataDir.startsWith('memory://');
}

/**
 * Embedded PGlite in a worker thread, with the surface drizzle-orm/pglite and src/db use (query, exec, transaction,
 * listen, close). Calls are serialised here as PGlite serialises them itself: one query, exec or whole transaction
 * (BEGIN..COMMIT) at a time; the queries of a transaction go straight through.
 */
export class PgliteThreadClient {
  private current: Thread | undefined;
  private starting: Promise<Thread> | undefined;
  private started = false;
  private closed = false;
  private closing: Promise<void> | undefined;
  private queue: Promise<unknown> = Promise.resolve();
  private nextId = 0;
  private readonly bound = new AsyncLocalStorage<number>();
  private readonly listeners = new Map<string, Set<NotificationListener>>();
  /** Whether a statement past its bound is cancelled (not in memory: ending the thread would lose everything). */
  private readonly cancels: boolean;

  private constructor(
    private readonly dataDir: string,
    private readonly sessionSql: string,
  ) {
    this.cancels = !isInMemoryDataDir(dataDir);
  }

  /**
   * Starts the thread and opens the database (`dataDir`: a directory, or `memory://`). `sessionSql` runs at every
   * start, since a restarted thread is a new session.
   */
  static async open(dataDir: string, sessionSql = ''): Promise<PgliteThreadClient> {
    const client = new PgliteThreadClient(dataDir, sessionSql);
    await client.thread();
    return client;
  }

  /** PGlite's query() (one statement, with parameters), once the calls before it, a transaction included, are done. */
  query<T>(sql: string, params?: unknown[], options?: QueryOptions): Promise<Results<T>> {
    return this.exclusive(async () => this.send<Results<T>>(await this.thread(), { op: 'query', sql, params, options: threadOptions(options) }));
  }

  /** PGlite's exec() (any number of statements, no parameters), in turn like query(). */
  exec(sql: string): Promise<Results[]> {
    return this.exclusive(async () => this.send<Results[]>(await this.thread(), { op: 'exec', sql }));
  }

  /**
   * Runs `sql` on the session that is open now, if any. When the last thread ended (a statement cancelled at its
   * bound), there is nothing to reset: the next call opens a new session, which starts from `sessionSql` anyway, and
   * reopening the database here would only make the caller wait for it.
   */
  execOnOpenSession(sql: string): Promise<void> {
    return this.exclusive(async () => {
      const thread = this.current;
      if (thread?.alive) await this.send(thread, { op: 'exec', sql });
    });
  }

  /** BEGIN, `callback`, COMMIT (ROLLBACK if it throws), as PGlite's transaction() does, holding the queue throughout. */
  transaction<T>(callback: (tx: PgliteThreadTransaction) => Promise<T>): Promise<T> {
    return this.exclusive(async () => {
      const thread = await this.thread();
      await this.send(thread, { op: 'exec', sql: 'BEGIN' });
      let open = true;
      const checkOpen = () => {
        if (!open) throw new Error('Transaction is closed');
      };
      const tx: PgliteThreadTransaction = {
        query: async <R>(sql: string, params?: unknown[], options?: QueryOptions) => {
          checkOpen();
          return this.send<Results<R>>(thread, { op: 'query', sql, params, options: threadOptions(options) });
        },
        exec: async (sql: string) => {
          checkOpen();
          return this.send<Results[]>(thread, { op: 'exec', sql });
        },
      };
      try {
        const result = await callback(tx);
        open = false;
        const [commit] = await this.send<Results[]>(thread, { op: 'exec', sql: 'COMMIT' });
        if (commit?.command === 'ROLLBACK') throw new TransactionAbortedError();
        return result;
      } catch (err) {
        // A thread that ended took its transaction with it: there is nothing to roll back on the new one.
        if (open && thread.alive) {
          open = false;
          await this.send(thread, { op: 'exec', sql: 'ROLLBACK' });
        }
        throw err;
      }
    });
  }

  /**
   * Runs `statement` (queries on this client or one of its transactions) with each query bounded to `ms` from when
   * it is sent. One still running then is cancelled: the thread is ended, that query fails with a
   * StatementBoundError, any other call in flight with SQLSTATE 08006, and the next call reopens the database in a
   * new thread. In memory the statement runs to its end and fails afterwards if it took longer.
   */
  async bounded<T>(ms: number, statement: () => Promise<T>): Promise<T> {
    // Awaited inside run(): a drizzle query is a lazy thenable that only starts (and reads the bound) when awaited.
    if (this.cancels) return this.bound.run(ms, async () => await statement());
    const started = performance.now();
    const result = await statement();
    const took = Math.round(performance.now() - started);
    if (took > ms) throw new StatementBoundError(ms, false, took);
    return result;
  }

  /** LISTEN on `channel` (a plain lowercase identifier: the caller checks); kept across restarts of the thread. */
  async listen(channel: string, listener: NotificationListener): Promise<() => Promise<void>> {
    let set = this.listeners.get(channel);
    if (set) {
      set.add(listener);
    } else {
      set = new Set([listener]);
      this.listeners.set(channel, set);
      try {
        await this.exec(`LISTEN ${channel}`);
      } catch (err) {
        this.listeners.delete(channel);
        throw err;
      }
    }
    const listening = set;
    return async () => {
      if (!listening.delete(listener) || listening.size > 0 || this.listeners.get(channel) !== listening) return;
      this.listeners.delete(channel);
      if (!this.closed) await this.exec(`UNLISTEN ${channel}`);
    };
  }

  /**
   * Closes the database and ends the thread once the calls queued before have run; the next call opens the directory
   * in a new thread. The WebAssembly memory of the embedded database only grows: creating a database (initdb and
   * Forge's own tables) leaves ~700 MB resident that a new thread does not have.
   */
  recycle(): Promise<void> {
    return this.exclusive(async () => {
      const thread = this.current;
      if (!thread?.alive || this.closed) return;
      try {
        await this.send(thread, { op: 'close' });
      } finally {
        this.retire(thread);
        await thread.worker.terminate();
      }
    });
  }

  /** Closes the database once the calls queued before have run, and ends the thread. Idempotent. */
  close(): Promise<void> {
    this.closing ??= this.exclusive(async () => {
      this.closed = true;
      const thread = this.current;
      if (!thread) return;
      try {
        await this.send(thread, { op: 'close' });
      } finally {
        this.retire(thread);
        await thread.worker.terminate();
      }
    });
    return this.closing;
  }

  private exclusive<T>(fn: () => Promise<T>): Promise<T> {
    const result = this.queue.then(fn);
    this.queue = result.catch(() => undefined);
    return result;
  }

  /** The running thread, or a new one on the same data directory after the last one ended. */
  private thread(): Promise<Thread> {
    if (this.closed) return Promise.reject(new Error('The embedded database is closed.'));
    if (this.current) return Promise.resolve(this.current);
    this.starting ??= this.start().finally(() => {
      this.starting = undefined;
    });
    return this.starting;
  }

  private async start(): Promise<Thread> {
    const worker = new Worker(threadEntry(), { workerData: { dataDir: this.dataDir, sessionSql: this.sessionSql } });
    const thread: Thread = { worker, pending: new Map(), alive: true };
    const ready = new Promise<void>((resolve, reject) => {
      worker.on('message', (msg: ThreadMessage) => {
        if ('ready' in msg) resolve();
        else if ('startError' in msg) reject(databaseError(msg.startError));
        else this.receive(thread, msg);
      });
      worker.on('error', (err) => {
        reject(err);
        this.lose(thread, `it failed: ${err.message}`, err);
      });
      worker.on('exit', (code) => {
        reject(new Error(`the database thread exited with code ${code} while opening`));
        this.lose(thread, `it exited with code ${code}`);
      });
    });
    try {
      await ready;
      // Listening is per session: the new one listens where the last one did.
      for (const channel of this.listeners.keys()) await this.send(thread, { op: 'exec', sql: `LISTEN ${channel}` });
    } catch (err) {
      this.retire(thread);
      await worker.terminate();
      if (!this.started) throw err; // the first open: openPglite reports it
      throw connectionLost('08006', `The embedded database at ${this.dataDir} could not be reopened: ${err}`, err);
    }
    // Idle, the thread does not keep the process alive (an in-process PGlite did not); a call in flight does.
    worker.unref();
    this.started = true;
    this.current = thread;
    return thread;
  }

  private send<T = unknown>(thread: Thread, call: Call): Promise<T> {
    if (!thread.alive) {
      return Promise.reject(connectionLost('08003', 'The embedded database was restarted since this transaction began; it is gone.'));
    }
    const ms = call.op === 'close' ? undefined : this.bound.getStore();
    const id = ++this.nextId;
    return new Promise<T>((resolve, reject) => {
      thread.worker.postMessage({ ...call, id });
      const pending: PendingCall = { resolve: resolve as (value: unknown) => void, reject };
      if (ms !== undefined && this.cancels) pending.deadline = setTimeout(() => this.cancel(thread, id, ms), ms);
      if (thread.pending.size === 0) thread.worker.ref();
      thread.pending.set(id, pending);
    });
  }

  private receive(thread: Thread, msg: Exclude<ThreadMessage, { ready: true } | { startError: ErrorFields }>): void {
    if (!thread.alive) return;
    if ('notification' in msg) {
      for (const listener of this.listeners.get(msg.notification.channel) ?? []) listener(msg.notification.payload);
      return;
    }
    const pending = this.settle(thread, msg.id);
    if (!pending) return;
    if ('error' in msg) pending.reject(databaseError(msg.error));
    else pending.resolve(msg.result);
  }

  private settle(thread: Thread, id: number): PendingCall | undefined {
    const pending = thread.pending.get(id);
    if (!pending) return undefined;
    clearTimeout(pending.deadline);
    thread.pending.delete(id);
    if (thread.pending.size === 0 && thread.alive) thread.worker.unref();
    return pending;
  }

  private cancel(thread: Thread, id: number, ms: number): void {
    const pending = this.settle(thread, id);
    if (!pending || !thread.alive) return;
    pending.reject(new StatementBoundError(ms, true));
    this.lose(thread, `a statement was cancelled at its ${ms} ms bound`);
  }

  /** Ends a thread that was cut off or failed: its calls fail as a lost connection; the next call starts a new one. */
  private lose(thread: Thread, why: string, cause?: unknown): void {
    if (!thread.alive) return;
    const pending = [...thread.pending.values()];
    this.retire(thread);
    thread.worker.terminate().catch(() => undefined);
    for (const call of pending) {
      clearTimeout(call.deadline);
      const message = `The embedded database's thread ended (${why}) while this call ran; its transaction is gone.`;
      call.reject(connectionLost('08006', message, cause));
    }
  }

  private retire(thread: Thread): void {
    thread.alive = false;
    thread.pending.clear();
    if (this.current === thread) this.current = undefined;
  }
}
