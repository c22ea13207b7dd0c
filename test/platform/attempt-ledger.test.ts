import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Client } from '@temporalio/client';
import { handBackDeadWorkersAttempts } from '../../src/platform/attempt-ledger';

/**
 * Which worker directories the hand-back treats as dead (src/platform/attempt-ledger.ts): a process that is gone, a
 * zombie (a SIGKILLed worker not yet reaped), a pid now held by another process; never a live one. Directories
 * without attempts: the client is never asked (the hand-back itself is shown by test/chaos/worker-kill.test.ts).
 */
const linux = process.platform === 'linux';
const unusedClient = {} as Client;

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'forge-attempts-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const startTime = (pid: number) => readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ')[19]!;

(linux ? test : test.skip)('a live worker’s directory stays; a gone one’s, a reused pid’s and a zombie’s are removed', async () => {
  // Skipped off Linux: the identity there is the pid alone (no /proc start time, no zombie state).
  const exited = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' });
  const gone = Number(exited.stdout);
  // A zombie: the shell's child exits, and `sleep`, which the shell became, never reaps it.
  const parent = spawn('sh', ['-c', 'sleep 0 & echo $!; exec sleep 30'], { stdio: ['ignore', 'pipe', 'ignore'] });
  const zombie = Number(await new Promise<string>((resolve) => parent.stdout!.once('data', (d: Buffer) => resolve(d.toString().trim()))));
  try {
    for (let i = 0; i < 100 && !readFileSync(`/proc/${zombie}/stat`, 'utf8').includes(') Z '); i++) await new Promise((r) => setTimeout(r, 20));
    const live = `${process.pid}.${startTime(process.pid)}`;
    const names = { live, gone: `${gone}.1`, reused: `${process.pid}.1`, zombie: `${zombie}.${startTime(zombie)}` };
    for (const name of Object.values(names)) mkdirSync(path.join(dir, name));
    mkdirSync(path.join(dir, 'not-a-worker'));

    const result = await handBackDeadWorkersAttempts(dir, unusedClient);
    expect(result).toEqual({ workers: 3, attempts: [], errors: [] });
    expect(existsSync(path.join(dir, names.live))).toBe(true);
    expect(existsSync(path.join(dir, 'not-a-worker'))).toBe(true);
    for (const name of [names.gone, names.reused, names.zombie]) expect(existsSync(path.join(dir, name))).toBe(false);
  } finally {
    parent.kill('SIGKILL');
  }
});

test('no directory yet: nothing to hand back', async () => {
  await expect(handBackDeadWorkersAttempts(path.join(dir, 'missing'), unusedClient)).resolves.toEqual({ workers: 0, attempts: [], errors: [] });
});
