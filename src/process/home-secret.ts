import { randomBytes } from 'node:crypto';
import { link, readFile, rename, unlink, writeFile } from 'node:fs/promises';
import { PRIVATE_FILE_MODE } from '../contract/private-modes';

/** What a secret in such a file looks like (ours are 43 base64url characters). */
const SECRET = /^[\x21-\x7e]{16,}$/;

/**
 * The random secret kept in `file` (under FORGE_HOME, private to Forge's user): the one there when it holds one, else a
 * new one, created private and exclusively (a hard link of a complete temp file, so a worker starting at the same
 * moment finds the same secret, never half of one). A file that holds no secret (emptied, cut short) is replaced.
 * The read API's token and the dev facilitator's registration token are kept this way.
 */
export async function homeSecret(file: string): Promise<string> {
  const existing = await readFile(file, 'utf8').then(
    (t) => t.trim(),
    () => undefined,
  );
  if (existing !== undefined && SECRET.test(existing)) return existing;
  const secret = randomBytes(32).toString('base64url');
  const temp = `${file}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`;
  await writeFile(temp, `${secret}\n`, { mode: PRIVATE_FILE_MODE, flag: 'wx' });
  try {
    if (existing !== undefined) {
      // Replaced, and read back (a worker doing the same meanwhile wins).
      await rename(temp, file);
      return homeSecret(file);
    }
    try {
      await link(temp, file);
      return secret;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      // Another worker was first: its secret is the home's.
      return homeSecret(file);
    }
  } finally {
    await unlink(temp).catch(() => undefined);
  }
}
