import { readFile } from 'node:fs/promises';
import { UsageError } from './exit-codes';

/** Reads a file named on the command line (or stdin for `-`), turning a missing file into a usage error. */
export async function readInputFile(file: string): Promise<string> {
  return (await readInputBytes(file)).toString('utf8');
}

/** {@link readInputFile} as bytes, for callers that must see text that is not UTF-8 (a migration). */
export async function readInputBytes(file: string): Promise<Buffer> {
  if (file === '-') {
    const chunks: Buffer[] = [];
    for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
    return Buffer.concat(chunks);
  }
  try {
    return await readFile(file);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    const why = code === 'ENOENT' ? 'no such file' : code === 'EISDIR' ? 'it is a directory' : (err as Error).message;
    throw new UsageError(`cannot read ${file}: ${why}`);
  }
}

/** Parses a JSON argument such as --test-input, naming the flag in the error. */
export function parseJsonOption(flag: string, text: string | undefined): unknown {
  if (text === undefined) return undefined;
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new UsageError(`${flag} is not JSON: ${(err as Error).message}`);
  }
}
