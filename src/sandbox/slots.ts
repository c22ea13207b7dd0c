/**
 * The sandbox runs one worker process may have at once (FORGE_SANDBOX_CONCURRENCY), whichever way they came: a
 * deployment's test run as a local activity where its workflow task runs (`tryTake`, which never waits: a busy worker
 * sends the test to the sandbox queue instead, where any worker may take it), and the sandbox queue's activities
 * (`take`, which waits its turn). Each run is a process busy on a core, so more at once only slows all of them down.
 * Temporal's slot limit on the sandbox worker still bounds what it polls; this bounds what runs.
 */
export class SandboxSlots {
  private inUse = 0;
  private readonly waiting: Array<() => void> = [];

  constructor(readonly size: number) {
    if (!Number.isInteger(size) || size < 1) throw new Error(`SandboxSlots: size must be a positive integer, got ${size}`);
  }

  /** Runs going on now. */
  get busy(): number {
    return this.inUse;
  }

  /** A slot if one is free now (its release function), else undefined. Never waits, and never jumps the queue. */
  tryTake(): (() => void) | undefined {
    if (this.inUse >= this.size || this.waiting.length > 0) return undefined;
    this.inUse++;
    return this.releaser();
  }

  /** A slot, once one is free (first come, first served); rejects with the signal's reason if it aborts first. */
  take(signal?: AbortSignal): Promise<() => void> {
    const now = this.tryTake();
    if (now) return Promise.resolve(now);
    return new Promise((resolve, reject) => {
      if (signal?.aborted) return reject(signal.reason);
      const grant = () => {
        signal?.removeEventListener('abort', onAbort);
        this.inUse++;
        resolve(this.releaser());
      };
      const onAbort = () => {
        const at = this.waiting.indexOf(grant);
        if (at >= 0) this.waiting.splice(at, 1);
        reject(signal!.reason);
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      this.waiting.push(grant);
    });
  }

  /** Released once, however often it is called: a double release must not hand out a slot that is in use. */
  private releaser(): () => void {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.inUse--;
      this.waiting.shift()?.();
    };
  }
}
