import { defaultConcurrency, resolveLimits, runSandbox, SandboxPool, type SandboxLimits, type SandboxVerdict } from '../sandbox';
import type { PreloadSet } from '../sandbox/preload';

/** One call of a loaded tool version, as the registry hands it to an {@link Invoker}. */
export interface InvocationRequest {
  name: string;
  version: number;
  /** The version's compiled ES module. */
  compiledJs: string;
  input: unknown;
  /** Aborting ends the call (verdict `timeout`) and kills what it started. */
  signal?: AbortSignal;
  /** Lowers the platform's time limit for this call (never raises it). */
  timeoutMs?: number;
}

/**
 * Runs tool calls for a registry. The seam for other strategies (a pool of warm sandbox processes, say): whatever runs
 * the call must keep the sandbox's verdict semantics, i.e. validate the input with the tool's own schema, bound time,
 * memory and output, and leave no process behind.
 */
export interface Invoker {
  invoke(request: InvocationRequest): Promise<SandboxVerdict>;
  /** Releases what the invoker holds (spare processes); the registry calls it on close for invokers it made. */
  close?(): Promise<void>;
}

/**
 * The default invoker: a fresh sandbox child process per call (`runSandbox` with the persisted compiled module).
 *
 * Why a child per call rather than running tools in the agent's process or a worker thread:
 * - The agent's event loop and heap are out of the tool's reach: a tool that spins in a sync loop, leaks or
 *   allocates without end hits its own limits in its own process, and the agent only sees a verdict.
 * - The whole tree is killed at the end: the sandbox contains the child in a PID namespace (or process group), so
 *   processes a tool spawns do not outlive the call. A worker thread can neither bound off-heap memory (Buffers,
 *   native allocations) nor kill processes its code started.
 * - Calls have the same verdict semantics as the deployment's sandbox test (`passed`, `invalid` for input the schema
 *   rejects, `timeout`, `oom`, ...), because they are the same code path.
 * - The cost is a process start per call, tens of milliseconds (see bench/sandbox.ts for the figure beside the bare
 *   fork floor). With `spares`, that many processes are kept started ahead (a SandboxPool): a call takes one, still
 *   fresh and used once, and skips Node's start-up and, with `preload`, the loading of the packages tools import.
 *
 * At most `concurrency` calls run at once (default: the core count); further calls wait their turn, so a burst of
 * calls cannot fork the host to its knees.
 */
export function childPerCallInvoker(options: { limits?: Partial<SandboxLimits>; concurrency?: number; spares?: number; preload?: PreloadSet } = {}): Invoker {
  const limits = resolveLimits(options.limits);
  const slots = new Semaphore(options.concurrency ?? defaultConcurrency());
  const pool = options.spares ? new SandboxPool(limits, options.spares, { preload: options.preload }) : undefined;
  return {
    close: async () => pool?.close(),
    async invoke(request) {
      const started = performance.now();
      const acquired = await slots.acquire(request.signal);
      if (!acquired) {
        return {
          status: 'timeout',
          durationMs: Math.round(performance.now() - started),
          error: 'the call was cancelled before it started',
          diagnostics: { phase: 'limits' },
        };
      }
      try {
        const { timeoutMs } = request;
        const maxTimeoutMs = timeoutMs !== undefined && timeoutMs > 0 ? Math.min(limits.maxTimeoutMs, timeoutMs) : limits.maxTimeoutMs;
        return await runSandbox(
          {
            name: request.name,
            // The source is not needed when the compiled module is given; the sandbox checks only that it is a string.
            source: '',
            compiledJs: request.compiledJs,
            input: request.input,
            limits: { ...limits, maxTimeoutMs },
            signal: request.signal,
          },
          { pool },
        );
      } finally {
        slots.release();
      }
    },
  };
}

/** Counting semaphore whose waiters can give up through an AbortSignal. */
class Semaphore {
  private waiters: Array<() => void> = [];
  constructor(private free: number) {}

  acquire(signal?: AbortSignal): Promise<boolean> {
    if (signal?.aborted) return Promise.resolve(false);
    if (this.free > 0) {
      this.free--;
      return Promise.resolve(true);
    }
    return new Promise<boolean>((resolve) => {
      const grant = () => {
        signal?.removeEventListener('abort', abort);
        resolve(true);
      };
      const abort = () => {
        this.waiters = this.waiters.filter((w) => w !== grant);
        resolve(false);
      };
      this.waiters.push(grant);
      signal?.addEventListener('abort', abort, { once: true });
    });
  }

  release(): void {
    const next = this.waiters.shift();
    if (next) next();
    else this.free++;
  }
}
