/**
 * What a command leaves to finish before the CLI exits (a sandbox run's after-verdict cleanup). Commands load their
 * heavy modules only when they run, so `forge --version` or `forge --help` loads none of them; the few that start
 * work outliving their result register here what to wait for.
 */
const pending: (() => Promise<void>)[] = [];

export function beforeExit(wait: () => Promise<void>): void {
  pending.push(wait);
}

/** Waits for everything registered, in order; called by main once the command's result is printed. */
export async function waitBeforeExit(): Promise<void> {
  for (let wait = pending.shift(); wait; wait = pending.shift()) await wait();
}
