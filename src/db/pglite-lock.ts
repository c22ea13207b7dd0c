import { closeSync, openSync, readFileSync, unlinkSync, writeSync } from 'node:fs';
import { PRIVATE_FILE_MODE } from '../contract/private-modes';
import { liveProcess } from '../process/live-process';
import { DatabaseOpenError } from './errors';

/**
 * PGlite is one Postgres backend inside one process: two processes opening the same data directory would corrupt
 * it. This pid file makes the second opener fail with a clear error instead. A lock left by a dead process is taken
 * over. Returns the release function.
 */
export function lockDataDir(lockFile: string): () => void {
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      const fd = openSync(lockFile, 'wx', PRIVATE_FILE_MODE);
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
      if (Number.isInteger(holder) && holder !== process.pid && liveProcess(holder) !== undefined) {
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
