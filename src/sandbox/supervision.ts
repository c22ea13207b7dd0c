import type { LaunchedProcess } from './containment';
import type { Readable } from 'node:stream';

/** What a {@link Supervision} needs of a started, contained process. */
export interface SupervisedProcess {
  child: LaunchedProcess;
  /** The command's own stdout and stderr: every byte counts against the output limit. */
  stdout: Readable;
  stderr: Readable;
  /** Settles once the process exited and every pipe drained. */
  closed: Promise<void>;
  /** Why the process could not be started, if it could not (set before or after supervision begins). */
  spawnError?: Error;
  /** Kills the whole tree and resolves once it is dead (or once waiting longer is pointless). */
  kill(): Promise<void>;
}

/**
 * starting: watched, but not yet handed its work (a harness waits for its module and its cgroup);
 * running: handed its work; settling: the run has ended, the tree is being killed and its pipes drained;
 * done: nothing of it is left running, and what it wrote has been counted for good.
 */
export type SupervisionState = 'starting' | 'running' | 'settling' | 'done';

/** The first thing that ended a run; later ones are ignored. `E`: the caller's own reasons (a harness result). */
export type Ending<E> =
  | { kind: 'exited' }
  | { kind: 'deadline'; limitMs: number }
  | { kind: 'cancelled' }
  | { kind: 'output-limit' }
  | { kind: 'spawn-error'; error: Error }
  | { kind: 'start-failed'; error: Error }
  | E;

/** What the caller decides its verdict from, once the run is `done`. */
export interface Settled<E> {
  ending: Ending<E>;
  /** stdout + stderr bytes, counted until every pipe drained (so output written before a result still counts). */
  outputBytes: number;
  overOutputLimit: boolean;
  /** From the start of supervision to the first ending. */
  durationMs: number;
}

export interface SupervisionOptions {
  /** Wall clock from the start of supervision (not from the process's start: a pooled process may have waited). */
  wallClockMs: number;
  /** stdout + stderr bytes beyond which the run ends as `output-limit`. */
  outputBytes: number;
  /** Aborting ends the run as `cancelled`. */
  signal?: AbortSignal;
  /** Called every `everyMs` while the run is starting or running. */
  heartbeat?: { everyMs: number; beat: () => void };
}

/**
 * The life of one run of a contained process, as a small state machine (see {@link SupervisionState}): the first
 * {@link Ending} wins and moves it to settling, the tree is killed and drained, and only then is the run `done` and
 * {@link settled} resolved. The verdict is the caller's to decide from what it settled with; this class decides
 * nothing but when the run is over.
 */
export class Supervision<E extends { kind: string } = never> {
  private current: SupervisionState = 'starting';
  private ending: Ending<E> | undefined;
  private readonly startedAt = performance.now();
  private endedAt = 0;
  private deadline: number;
  private timer: NodeJS.Timeout | undefined;
  private heartbeat: NodeJS.Timeout | undefined;
  private outputBytes = 0;
  private resolveSettled: (settled: Settled<E>) => void = () => undefined;
  /** Resolves once the run is `done`. */
  readonly settled: Promise<Settled<E>>;

  constructor(
    private readonly proc: SupervisedProcess,
    private readonly options: SupervisionOptions,
  ) {
    this.deadline = this.startedAt + options.wallClockMs;
    this.settled = new Promise((resolve) => (this.resolveSettled = resolve));
  }

  get state(): SupervisionState {
    return this.current;
  }

  /**
   * Starts watching: cancellation, the clock, output, spawn errors and the process's end. Once `ready` resolves the
   * run moves to running and `begin` hands the process its work (not called when the run already ended); a rejection
   * of `ready` ends the run as `start-failed`.
   */
  start(ready: Promise<unknown> = Promise.resolve(), begin: () => void = () => undefined): Promise<Settled<E>> {
    const { signal } = this.options;
    if (signal?.aborted) this.onAbort();
    signal?.addEventListener('abort', this.onAbort, { once: true });
    if (this.isLive()) this.armTimer();
    const { heartbeat } = this.options;
    if (heartbeat && this.isLive()) this.heartbeat = setInterval(heartbeat.beat, heartbeat.everyMs);
    this.proc.stdout.on('data', this.countOutput);
    this.proc.stderr.on('data', this.countOutput);
    if (this.proc.spawnError) this.end({ kind: 'spawn-error', error: this.proc.spawnError });
    this.proc.child.on('error', (error) => this.end({ kind: 'spawn-error', error }));
    // 'close' comes after every pipe has drained, so a result written just before exiting is never lost.
    void this.proc.closed.then(() => this.end({ kind: 'exited' }));
    ready.then(
      () => {
        if (this.current !== 'starting') return;
        this.current = 'running';
        begin();
      },
      (error: Error) => this.end({ kind: 'start-failed', error }),
    );
    return this.settled;
  }

  /** Moves the deadline earlier (never later) while the run is live; says whether it moved. */
  lowerDeadline(at: number): boolean {
    if (!this.isLive() || at >= this.deadline) return false;
    this.deadline = at;
    this.armTimer();
    return true;
  }

  /**
   * starting/running → settling: the first ending wins. The tree is killed and every pipe drained (at most 2 s after
   * the kill) before the run is done, so the output count it settles with is final.
   */
  end(ending: Ending<E>): void {
    if (!this.isLive()) return;
    this.current = 'settling';
    this.ending = ending;
    this.endedAt = performance.now();
    clearTimeout(this.timer);
    clearInterval(this.heartbeat);
    this.options.signal?.removeEventListener('abort', this.onAbort);
    const finish = () => {
      this.current = 'done';
      this.resolveSettled({
        ending,
        outputBytes: this.outputBytes,
        overOutputLimit: this.outputBytes > this.options.outputBytes,
        durationMs: Math.round(this.endedAt - this.startedAt),
      });
    };
    this.proc
      .kill()
      .then(() => Promise.race([this.proc.closed, delay(2000)]))
      .then(finish, finish);
  }

  private isLive(): boolean {
    return this.current === 'starting' || this.current === 'running';
  }

  private armTimer(): void {
    clearTimeout(this.timer);
    const limitMs = Math.round(this.deadline - this.startedAt);
    // The decision waits for one turn of the event loop: when the loop was held up (the process also supervises other
    // runs), timers run before pending I/O is read, and a result that arrived in time would lose to its own deadline.
    this.timer = setTimeout(() => setImmediate(() => this.end({ kind: 'deadline', limitMs })), Math.max(0, this.deadline - performance.now()));
  }

  private readonly onAbort = () => this.end({ kind: 'cancelled' });

  /** Counted in every state: what drains after the kill still counts against the limit. */
  private readonly countOutput = (chunk: Buffer) => {
    this.outputBytes += chunk.length;
    if (this.outputBytes > this.options.outputBytes) this.end({ kind: 'output-limit' });
  };
}

const delay = (ms: number) => new Promise<void>((r) => setTimeout(r, ms).unref());
