/**
 * Prints a command's result: exactly one JSON object on stdout with --json, human text otherwise.
 * Progress and warnings always go to stderr so that stdout stays machine-readable.
 */
export function printResult(json: boolean, result: object, human: () => string): void {
  if (json) process.stdout.write(JSON.stringify(result) + '\n');
  else process.stdout.write(human() + '\n');
}

export function printError(json: boolean, message: string, extra: Record<string, unknown> = {}): void {
  if (json) process.stdout.write(JSON.stringify({ error: message, ...extra }) + '\n');
  else process.stderr.write(`forge: ${message}\n`);
}

/**
 * Resolves once everything written so far to stdout and stderr has been handed to the operating system: what a
 * process awaits before process.exit(). Writes to a file are synchronous, but on a pipe whatever the reader has not
 * taken yet (beyond the pipe's 64 KiB) waits inside the process, and exiting then drops it: a truncated JSON answer.
 */
export async function drainOutput(): Promise<void> {
  await Promise.all([drained(process.stdout), drained(process.stderr)]);
}

function drained(stream: NodeJS.WriteStream): Promise<void> {
  if (stream.destroyed || stream.writableLength === 0) return Promise.resolve();
  return new Promise((resolve) => {
    // A reader that went away (EPIPE) leaves nothing to deliver: the failed write emits 'error' after its callbacks,
    // which must not become an uncaught exception on the way out. The listener stays: the process is about to exit.
    stream.on('error', () => resolve());
    stream.once('close', () => resolve());
    // Write callbacks run in order: this empty write's runs once every earlier write has reached the OS.
    stream.write('', () => resolve());
  });
}
