/** Exit codes of every `forge` command (CLI.md). */
export const ExitCode = {
  /** The thing asked for happened. */
  ok: 0,
  /** It was refused or failed: a verdict, not a crash. */
  refused: 1,
  /** Bad usage or bad input. */
  usage: 2,
  /**
   * The platform could not be reached, or is not whole: no Forge worker polls (and --wait was not given), or its
   * Temporal lacks Forge's search attributes. Nothing was done, unless the error names a run that waits for a worker.
   */
  unreachable: 3,
} as const;
export type ExitCode = (typeof ExitCode)[keyof typeof ExitCode];

/** Thrown by a command for bad usage or bad input; the CLI prints the message and exits 2. */
export class UsageError extends Error {
  override readonly name = 'UsageError';
}
