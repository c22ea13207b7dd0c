import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { DatabaseOpenError } from '../../src/db/errors';
import { lockDataDir } from '../../src/db/pglite-lock';
import { testIf } from '../helpers/skip';

function procState(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
  } catch {
    return undefined;
  }
}

async function waitFor(check: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 100; i++) {
    if (check()) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`timed out waiting for ${what}`);
}

describe('the PGlite data directory lock', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(path.join(tmpdir(), 'forge-lock-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  test('a live holder keeps it: the second opener gets a clear DatabaseOpenError', async () => {
    const holder = spawn('sleep', ['30'], { stdio: 'ignore' });
    try {
      const lock = path.join(dir, 'pgdata.lock');
      writeFileSync(lock, String(holder.pid));
      expect(() => lockDataDir(lock)).toThrow(DatabaseOpenError);
      expect(() => lockDataDir(lock)).toThrow(`already open in process ${holder.pid}`);
    } finally {
      holder.kill('SIGKILL');
    }
  });

  // Issue 9: `forge worker` restarted within ~2 s of a SIGKILL failed while the killed one was still an unreaped
  // zombie. Here the holder's parent is a process that never reaps (sh exec'd into sleep), so it stays a zombie.
  testIf(process.platform === 'linux', 'Linux only: zombies are read from /proc')('a killed holder that is still a zombie does not keep it', async () => {
    const pidFile = path.join(dir, 'holder.pid');
    const parent = spawn('sh', ['-c', `sleep 30 & echo $! > '${pidFile}'; exec sleep 30`], { stdio: 'ignore' });
    try {
      await waitFor(() => existsSync(pidFile) && readFileSync(pidFile, 'utf8').trim() !== '', 'the holder to start');
      const holder = Number(readFileSync(pidFile, 'utf8').trim());
      const lock = path.join(dir, 'pgdata.lock');
      writeFileSync(lock, String(holder));
      process.kill(holder, 'SIGKILL');
      await waitFor(() => procState(holder) === 'Z', 'the holder to become a zombie');
      const release = lockDataDir(lock);
      expect(readFileSync(lock, 'utf8')).toBe(String(process.pid));
      release();
      expect(existsSync(lock)).toBe(false);
    } finally {
      parent.kill('SIGKILL');
    }
  });
});
