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
