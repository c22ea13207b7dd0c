import { readFile } from 'node:fs/promises';
import { UsageError } from './exit-codes';

/** Reads a file named on the command line (or stdin for `-`), turning a missing file into a usage error. */
export async function readInputFile(file: string): Promise<string> {
  if (file === '-') {
    const chunks: Buffer[] = [];
    for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
    return Buffer.concat(chunks).toString('utf8');
  }
  try {
    return await readFile(file, 'utf8');
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
