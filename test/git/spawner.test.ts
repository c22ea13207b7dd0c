import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { GitCommandError } from '../../src/git';
import { git, gitBytes } from '../../src/git/exec';
import { stopProcessHelpers } from '../../src/process/process-helpers';
import { HELPER_SOURCE, helperPid } from '../../src/process/spawner';
import { transpiledSpawner } from '../helpers/transpiled-spawner';
import { alive, until } from '../helpers/processes';

/*
 * Git commands go through a helper process (src/process/spawner.ts), so that a worker's large heap does not make every
 * git start cost ~20 ms. What a caller sees must be what execFile gave: output, input, exit codes, timeouts, and a
 * typed error when the helper is gone; and the helper must not outlive its parent or keep it alive.
 */

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'forge-spawner-'));
  await git(['init', '-q'], { cwd: dir });
});
afterAll(() => rm(dir, { recursive: true, force: true }));

/** A git command that runs for `seconds` (a shell alias: sleep). */
const slow = (seconds: number) => ['-c', `alias.slow=!sleep ${seconds}`, 'slow'];

test('output, input and exit codes are what git gave; an unexpected exit is a GitCommandError with its stderr', async () => {
  const blob = (await git(['hash-object', '-w', '--stdin'], { cwd: dir, input: 'hello\n' })).stdout.trim();
  expect(blob).toBe('ce013625030ba8dba906f756967f9e9ca394464a');
  expect((await gitBytes(['cat-file', 'blob', blob], { cwd: dir })).equals(Buffer.from('hello\n'))).toBe(true);
  const binary = Buffer.from([0, 255, 1, 254, 10]);
  const binaryBlob = (await git(['hash-object', '-w', '--stdin'], { cwd: dir, input: binary })).stdout.trim();
  expect((await gitBytes(['cat-file', 'blob', binaryBlob], { cwd: dir })).equals(binary)).toBe(true);
  expect(await git(['rev-parse', '--verify', '--quiet', 'nope'], { cwd: dir, okExitCodes: [1] })).toEqual({ stdout: '', stderr: '', exitCode: 1 });
  const err = await git(['cat-file', 'blob', 'nope'], { cwd: dir }).catch((e: unknown) => e);
  expect(err).toBeInstanceOf(GitCommandError);
  expect(err).toMatchObject({ exitCode: 128, signal: null, cwd: dir });
  expect((err as GitCommandError).stderr).toContain('nope');
  // The environment is the caller's (minus GIT_*), given with each command: an added variable reaches git.
  const { stdout } = await git(['var', 'GIT_AUTHOR_IDENT'], { cwd: dir, env: { GIT_AUTHOR_NAME: 'Spawner Test', GIT_AUTHOR_EMAIL: 's@t' } });
  expect(stdout).toMatch(/^Spawner Test <s@t>/);
});

test('a command past its timeout is killed (SIGKILL)', async () => {
  const started = Date.now();
  const err = await git(slow(5), { cwd: dir, timeoutMs: 300 }).catch((e: unknown) => e);
  expect(err).toBeInstanceOf(GitCommandError);
  expect(err).toMatchObject({ exitCode: null, signal: 'SIGKILL' });
  expect(Date.now() - started).toBeLessThan(4_000);
});

test('many commands at once each get their own answer', async () => {
  const inputs = Array.from({ length: 40 }, (_, i) => `content ${i}\n`);
  const blobs = await Promise.all(inputs.map((input) => git(['hash-object', '--stdin'], { cwd: dir, input }).then((r) => r.stdout.trim())));
  const again = await Promise.all(inputs.map((input) => git(['hash-object', '--stdin'], { cwd: dir, input }).then((r) => r.stdout.trim())));
  expect(new Set(blobs).size).toBe(40);
  expect(again).toEqual(blobs);
});

test('a helper killed with a command in flight fails that command as a GitCommandError; the next command starts a new helper', async () => {
  await git(['--version'], { cwd: dir });
  const first = helperPid()!;
  expect(alive(first)).toBe(true);
  const inFlight = git(slow(1), { cwd: dir }).catch((e: unknown) => e);
  await new Promise((r) => setTimeout(r, 100));
  process.kill(first, 'SIGKILL');
  const err = await inFlight;
  expect(err).toBeInstanceOf(GitCommandError);
  expect(err).toMatchObject({ exitCode: null });
  expect((err as Error).message).toContain('helper process exited');
  expect((await git(['rev-parse', '--git-dir'], { cwd: dir })).stdout.trim()).toBe('.git');
  expect(helperPid()).not.toBe(first);
  expect(alive(helperPid()!)).toBe(true);
});

test('the helper ignores SIGINT (a Ctrl-C reaches the whole group; the parent decides)', async () => {
  await git(['--version'], { cwd: dir });
  const pid = helperPid()!;
  process.kill(pid, 'SIGINT');
  await new Promise((r) => setTimeout(r, 200));
  expect(alive(pid)).toBe(true);
  expect((await git(['--version'], { cwd: dir })).stdout).toMatch(/^git version/);
  expect(helperPid()).toBe(pid);
});

test('when its parent goes, the helper lets the commands it runs finish (a git killed half-way leaves locks), then exits', async () => {
  const marker = path.join(dir, `marker-${process.pid}`);
  const helper = spawn(process.execPath, ['-e', HELPER_SOURCE], { env: {}, stdio: ['ignore', 'ignore', 'ignore', 'ipc'], serialization: 'advanced' });
  const exited = new Promise<number | null>((r) => helper.once('exit', (code) => r(code)));
  // A command that creates the marker after 1 s.
  helper.send({
    id: 1,
    file: '/bin/sh',
    args: ['-c', `sleep 1; touch ${marker}`],
    cwd: dir,
    env: { PATH: process.env.PATH },
    maxBuffer: 1024,
    timeout: 10_000,
  });
  await new Promise((r) => setTimeout(r, 300));
  const disconnectedAt = Date.now();
  helper.disconnect();
  expect(await exited).toBe(0);
  expect(Date.now() - disconnectedAt).toBeGreaterThan(400);
  expect(existsSync(marker)).toBe(true);
  // With nothing running, it exits at once.
  const idle = spawn(process.execPath, ['-e', HELPER_SOURCE], { env: {}, stdio: ['ignore', 'ignore', 'ignore', 'ipc'], serialization: 'advanced' });
  const idleExited = new Promise<number | null>((r) => idle.once('exit', (code) => r(code)));
  await new Promise((r) => setTimeout(r, 300));
  idle.disconnect();
  expect(await idleExited).toBe(0);
});

test('an idle helper does not keep its parent alive, and exits when the parent does', async () => {
  // The real spawner.ts, transpiled as it is, in a Node process that runs one command and then has nothing to do.
  const module = transpiledSpawner(dir);
  const script = `const s = require(${JSON.stringify(module)});
    s.spawnThroughHelper({ file: 'git', args: ['--version'], cwd: ${JSON.stringify(dir)}, env: { PATH: process.env.PATH }, maxBuffer: 1024, timeout: 10000 })
      .then((r) => process.stdout.write(s.helperPid() + ' ' + r.stdout.toString()));`;
  const child = spawn(process.execPath, ['-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  child.stdout!.on('data', (c: Buffer) => (out += c.toString()));
  const code = await new Promise<number | null>((r) => child.once('exit', (c) => r(c)));
  expect(code).toBe(0);
  expect(out).toMatch(/^\d+ git version/);
  const pid = Number(out.split(' ')[0]);
  expect(await until(() => !alive(pid))).toBe(true);
}, 20_000);

test('stopProcessHelpers ends the helper (it has exited when the call returns); the next command starts a new one', async () => {
  await git(['--version'], { cwd: dir });
  const first = helperPid()!;
  expect(alive(first)).toBe(true);
  await stopProcessHelpers();
  expect(helperPid()).toBeUndefined();
  expect(alive(first)).toBe(false);
  await stopProcessHelpers(); // none runs: nothing to do
  expect((await git(['--version'], { cwd: dir })).stdout).toMatch(/^git version/);
  expect(helperPid()).not.toBe(first);
  expect(alive(helperPid()!)).toBe(true);
});
