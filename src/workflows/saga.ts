import { CancellationScope, log } from '@temporalio/workflow';

/**
 * Compensations of a workflow, registered before the step that needs them and run in reverse order inside a
 * non-cancellable scope: a cancelled run must still undo what it did (samples-typescript `saga/`).
 */
export class Saga {
  private readonly compensations: { name: string; run: () => Promise<unknown> }[] = [];

  add(name: string, run: () => Promise<unknown>): void {
    this.compensations.push({ name, run });
  }

  /** Runs every compensation, newest first; a failing one is logged and the rest still run. */
  async compensate(): Promise<void> {
    await CancellationScope.nonCancellable(async () => {
      for (const c of [...this.compensations].reverse()) {
        try {
          await c.run();
        } catch (err) {
          log.error('compensation failed; continuing with the rest', { compensation: c.name, error: String(err) });
        }
      }
    });
    this.compensations.length = 0;
  }
}
