import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { transpiledSpawner } from '../helpers/transpiled-spawner';
import { HELPER_SOURCE, helperPid, spawnRelayed, type RelayedChild } from '../../src/process/spawner';
import { alive, until } from '../helpers/processes';

/*
 * Contained process trees are started by the spawn helper (src/process/spawner.ts), which relays their pipes: a fork
 * of a worker holding ~1 GB blocks its main thread ~30 ms per sandbox run. What the supervising code sees must be what
 * a ChildProcess gave: the pid, every byte of every pipe in order, writes to fd 3, the exit and then the close; and a
 * relayed process must not outlive the helper's parent, nor the helper.
 */

const ENV = { PATH: process.env.PATH ?? '/usr/bin:/bin' };

function collect(child: RelayedChild): { out: Buffer[]; err: Buffer[]; fd3: Buffer[]; fd4: Buffer[]; closed: Promise<[number | null, string | null]> } {
  const out: Buffer[] = [];
  const err: Buffer[] = [];
  const fd3: Buffer[] = [];
  const fd4: Buffer[] = [];
  child.stdout.on('data', (c: Buffer) => out.push(c));
  child.stderr.on('data', (c: Buffer) => err.push(c));
  child.stdio[3]?.on('data', (c: Buffer) => fd3.push(c));
  child.stdio[4].on('data', (c: Buffer) => fd4.push(c));
  const closed = new Promise<[number | null, string | null]>((r) => child.once('close', () => r([child.exitCode, child.signalCode])));
  return { out, err, fd3, fd4, closed };
}

test('pid, the four pipes in order, writes to fd 3, then exit and close; stdin is /dev/null', async () => {
  // fd 3 echoes one line back; fds 1, 2 and 4 each get their own text; stdin reads nothing.
  const script = 'read line <&3; echo "got $line" >&3; echo out; echo err >&2; echo four >&4; cat; exit 7';
  const child = spawnRelayed({ command: '/bin/sh', args: ['-c', script], cwd: '/', env: ENV, detached: true, channel: true });
  const events: string[] = [];
  child.on('spawn', () => events.push('spawn'));
  child.on('exit', () => events.push('exit'));
  child.on('close', () => events.push('close'));
  const got = collect(child);
  child.stdio[3]!.write('hello\n');
  expect(await got.closed).toEqual([7, null]);
  expect(events).toEqual(['spawn', 'exit', 'close']);
  expect(typeof child.pid).toBe('number');
  expect(Buffer.concat(got.fd3).toString()).toBe('got hello\n');
  expect(Buffer.concat(got.out).toString()).toBe('out\n');
  expect(Buffer.concat(got.err).toString()).toBe('err\n');
  expect(Buffer.concat(got.fd4).toString()).toBe('four\n');
  expect(helperPid()).not.toBe(process.pid);
});

test('a flood arrives whole and in order (the helper pauses the pipe while its relay is behind)', async () => {
  // 24 MiB of numbered lines, faster than the parent reads them.
  const child = spawnRelayed({ command: '/usr/bin/seq', args: ['1', '3000000'], cwd: '/', env: ENV, detached: true, channel: false });
  const got = collect(child);
  expect(await got.closed).toEqual([0, null]);
  const lines = Buffer.concat(got.out).toString().split('\n');
  expect(lines.length).toBe(3_000_001);
  expect(lines[0]).toBe('1');
  expect(lines[2_999_999]).toBe('3000000');
  expect(lines.every((l, i) => i === 3_000_000 || l === String(i + 1))).toBe(true);
}, 60_000);

test('a command that cannot be started: an error, no pid, and the close', async () => {
  const child = spawnRelayed({ command: '/nonexistent/launcher', args: [], cwd: '/', env: ENV, detached: true, channel: false });
  const errors: Error[] = [];
  child.on('error', (e: Error) => errors.push(e));
  const got = collect(child);
  await child.spawned;
  await got.closed;
  expect(child.pid).toBeUndefined();
  expect(errors[0]?.message).toMatch(/ENOENT/);
});

test('when the helper dies, its relayed processes die with it and are reported killed; the next spawn starts a new helper', async () => {
  // setpriv --pdeathsig, as every containment launcher is started, ties the process to the helper.
  const child = spawnRelayed({ command: 'setpriv', args: ['--pdeathsig', 'KILL', '--', 'sleep', '30'], cwd: '/', env: ENV, detached: true, channel: false });
  const got = collect(child);
  await child.spawned;
  const pid = child.pid!;
  expect(alive(pid)).toBe(true);
  process.kill(helperPid()!, 'SIGKILL');
  expect(await got.closed).toEqual([null, 'SIGKILL']);
  expect(Buffer.concat(got.err).toString()).toMatch(/^forge-sandbox: the spawn helper process exited/);
  expect(await until(() => !alive(pid))).toBe(true);
  const next = spawnRelayed({ command: '/bin/true', args: [], cwd: '/', env: ENV, detached: true, channel: false });
  expect(await collect(next).closed).toEqual([0, null]);
});

test('when its parent goes, the helper kills its relayed processes at once, and exits', async () => {
  const helper = spawn(process.execPath, ['-e', HELPER_SOURCE], { env: {}, stdio: ['ignore', 'ignore', 'ignore', 'ipc'], serialization: 'advanced' });
  const exited = new Promise<number | null>((r) => helper.once('exit', (code) => r(code)));
  const spawned = new Promise<number>((r) => helper.on('message', (m: { ev?: string; pid?: number }) => m.ev === 'spawn' && r(m.pid!)));
  // A process that would ignore its launcher's death: only the helper's kill ends it. (No flood beside it: a parent's
  // disconnect() can wait for a message it is half-way through reading, which a flood never lets end, as seen here
  // under load; a parent that dies closes the channel at once.)
  helper.send({ id: 1, op: 'spawn', command: '/bin/sh', args: ['-c', 'trap "" HUP TERM; sleep 30'], cwd: '/', env: ENV, detached: true, channel: false });
  const pid = await spawned;
  expect(alive(pid)).toBe(true);
  helper.disconnect();
  expect(await exited).toBe(0);
  // Long before its 30 s are up.
  expect(await until(() => !alive(pid))).toBe(true);
});

test('a parent killed with SIGKILL takes the helper and every relayed tree with it (the kernel, not the helper, does it)', async () => {
  const dir = await mkdtemp(path.join(tmpdir(), 'forge-relayed-'));
  try {
    // A plain Node parent that starts a relayed process as the containment does (setpriv --pdeathsig), says the pids,
    // and waits: the test then SIGKILLs it.
    const script = `const s = require(${JSON.stringify(transpiledSpawner(dir))});
      const c = s.spawnRelayed({ command: 'setpriv', args: ['--pdeathsig', 'KILL', '--', 'sleep', '30'], cwd: '/', env: { PATH: process.env.PATH }, detached: true, channel: false });
      c.spawned.then(() => process.stdout.write(s.helperPid() + ' ' + c.pid + '\\n'));`;
    const parent = spawn(process.execPath, ['-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
    const line = await new Promise<string>((resolve) => parent.stdout!.once('data', (c: Buffer) => resolve(c.toString())));
    const [helper, tree] = line.trim().split(' ').map(Number);
    expect(alive(helper) && alive(tree)).toBe(true);
    parent.kill('SIGKILL');
    expect(await until(() => !alive(helper))).toBe(true);
    expect(await until(() => !alive(tree))).toBe(true);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
