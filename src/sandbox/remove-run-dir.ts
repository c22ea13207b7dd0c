import { spawn } from 'node:child_process';
import { rm } from 'node:fs/promises';

/**
 * Removes a run's private directory, whatever the tool left in it. Never throws: a directory that cannot be removed is
 * reported on stderr, and the run's verdict stays what the tool earned (cleanup is the platform's job, not the tool's
 * outcome).
 *
 * fs.rm walks by path, so a tree nested deeper than PATH_MAX (a tool can build one with relative mkdir + chdir) fails
 * with ENAMETOOLONG; GNU rm walks by directory handle and removes it. `--one-file-system` keeps it from descending
 * into anything mounted inside.
 */
export async function removeRunDir(dir: string): Promise<void> {
  try {
    await rm(dir, { recursive: true, force: true });
    return;
  } catch (err) {
    const fallback = await rmByHandle(dir);
    if (fallback !== undefined) {
      process.stderr.write(`forge sandbox: could not remove ${dir}: ${(err as Error).message}; rm -rf said: ${fallback}\n`);
    }
  }
}

/** `rm -rf --one-file-system DIR`; resolves undefined on success, else what went wrong. */
function rmByHandle(dir: string): Promise<string | undefined> {
  return new Promise((resolve) => {
    const child = spawn('rm', ['-rf', '--one-file-system', '--', dir], { stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => {
      if (stderr.length < 2000) stderr += chunk.toString('utf8');
    });
    child.on('error', (err) => resolve(err.message));
    child.on('close', (code) => resolve(code === 0 ? undefined : stderr.trim() || `exit code ${code}`));
  });
}
