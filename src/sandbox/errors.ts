/** Thrown when a check does not finish within its time limit; the checker's thread was ended (the next check starts a new one). */
export class TypecheckTimeoutError extends Error {
  constructor(readonly timeoutMs: number) {
    super(`the type check did not finish within ${timeoutMs} ms`);
    this.name = 'TypecheckTimeoutError';
  }
}

/** Thrown when the checker itself failed on this module (its thread threw or died while checking it). */
export class TypecheckCrashedError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'TypecheckCrashedError';
  }
}

/** Thrown for a check that was waiting when another check's timeout ended the thread: worth trying again. */
export class TypecheckInterruptedError extends Error {
  constructor() {
    super('the type checker was restarted while this check waited for it; try again');
    this.name = 'TypecheckInterruptedError';
  }
}
