import { closeSync, openSync, readFileSync, unlinkSync, writeSync } from 'node:fs';
import { DatabaseOpenError } from './errors';

/**
 * Whether `pid` is a process that may still hold the database. A killed worker stays a zombie until its parent reaps
 * it (a supervisor restarting it within a second or two, a shell that has not waited yet): it exists for kill(0), but
 * its memory and files are gone, so it holds nothing.
 */
function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (err) {
    // EPERM: it exists but belongs to someone else.
    if ((err as NodeJS.ErrnoException).code !== 'EPERM') return false;
  }
  return !isZombie(pid);
}

/** Linux: state Z (zombie) or X (dead) in /proc/PID/stat; false where /proc cannot say. */
function isZombie(pid: number): boolean {
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return false;
  }
  // "pid (comm) S ...": comm may hold spaces and parentheses, so the state follows the last ')'.
  const state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
  return state === 'Z' || state === 'X';
}

/**
 * PGlite is one Postgres backend inside one process: two processes opening the same data directory would corrupt
 * it. This pid file makes the second opener fail with a clear error instead. A lock left by a dead process is taken
 * over. Returns the release function.
 */
export function lockDataDir(lockFile: string): () => void {
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      const fd = openSync(lockFile, 'wx');
      writeSync(fd, String(process.pid));
      closeSync(fd);
      return () => {
        try {
          if (readFileSync(lockFile, 'utf8') === String(process.pid)) unlinkSync(lockFile);
        } catch {
          // Already gone: nothing to release.
        }
      };
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      const holder = Number.parseInt(readFileSync(lockFile, 'utf8'), 10);
      if (Number.isInteger(holder) && holder !== process.pid && processAlive(holder)) {
        throw new DatabaseOpenError(
          `The embedded database is already open in process ${holder} (${lockFile}). With PGlite only the worker ` +
            'process opens it; other processes reach state through Temporal, or set DATABASE_URL to use PostgreSQL.',
          'pglite',
        );
      }
      if (holder === process.pid) {
        throw new DatabaseOpenError(`The embedded database is already open in this process (${lockFile}).`, 'pglite');
      }
      unlinkSync(lockFile); // stale: its process is gone
    }
  }
  throw new DatabaseOpenError(`Could not take the PGlite lock ${lockFile}.`, 'pglite');
}
