import { spawn } from 'node:child_process';
import { existsSync, readFileSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { removeOrphanedLock, withFileLock } from '../../src/registry/file-lock';
import { lockLeftByKilledHolder, scratchDir } from './helpers';

describe('withFileLock (active.json is replaced under it when workers share agent-tools/)', () => {
  let dir: string;
  beforeEach(() => {
    dir = scratchDir('forge-file-lock-');
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  test('three processes incrementing one file under the lock lose no increment, and the lock is gone afterwards', async () => {
    const counter = path.join(dir, 'counter');
    const lock = path.join(dir, '.counter.lock');
    writeFileSync(counter, '0');
    const children = [0, 1, 2].map(() =>
      spawn(path.resolve('node_modules/.bin/tsx'), [path.join(__dirname, 'file-lock-child.ts'), counter, lock, '60'], { stdio: 'inherit' }),
    );
    const codes = await Promise.all(children.map((c) => new Promise<number | null>((r) => c.once('exit', r))));
    expect(codes).toEqual([0, 0, 0]);
    expect(readFileSync(counter, 'utf8')).toBe('180');
    expect(existsSync(lock)).toBe(false);
  });

  test('a lock left by a holder that died is taken over once stale; a fresh one held by another is waited for', async () => {
    const lock = path.join(dir, '.x.lock');
    writeFileSync(lock, '999999:dead');
    const old = new Date(Date.now() - 60_000);
    utimesSync(lock, old, old);
    await expect(withFileLock(lock, async () => 'ran')).resolves.toBe('ran');
    expect(existsSync(lock)).toBe(false);

    writeFileSync(lock, 'someone-else'); // fresh: held right now
    await expect(withFileLock(lock, async () => 'ran', 200)).rejects.toThrow(/could not take the lock/);
    expect(readFileSync(lock, 'utf8')).toBe('someone-else'); // not ours to remove
  });

  test('a lock whose holder was killed is taken over at once, long before it is stale; a foreign one is left to age', async () => {
    const lock = path.join(dir, '.z.lock');
    await lockLeftByKilledHolder(lock);
    expect(existsSync(lock)).toBe(true);
    // Within 1 s where staleness takes 5: only the holder's death can let it through.
    await expect(withFileLock(lock, async () => 'ran', 1_000)).resolves.toBe('ran');
    expect(existsSync(lock)).toBe(false);

    // What a worker's start does with such a lock when nothing needs it.
    await lockLeftByKilledHolder(lock);
    await expect(removeOrphanedLock(lock)).resolves.toBe(true);
    expect(existsSync(lock)).toBe(false);

    // A holder in another PID namespace (a container sharing the directory) may be alive whatever its pid says here.
    const noSuchPid = Number(readFileSync('/proc/sys/kernel/pid_max', 'utf8')) + 1;
    writeFileSync(lock, `1-${noSuchPid}-12345-abcdef`);
    await expect(removeOrphanedLock(lock)).resolves.toBe(false);
    await expect(withFileLock(lock, async () => 'ran', 200)).rejects.toThrow(/could not take the lock/);
    expect(readFileSync(lock, 'utf8')).toBe(`1-${noSuchPid}-12345-abcdef`);
  });

  test('a failing section releases the lock', async () => {
    const lock = path.join(dir, '.y.lock');
    await expect(withFileLock(lock, async () => Promise.reject(new Error('boom')))).rejects.toThrow('boom');
    expect(existsSync(lock)).toBe(false);
  });
});
