import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runContainedProcess, type ContainedProcessOptions, type ContainedProcessResult } from '../../src/sandbox';
import { runCgroupSupport } from '../../src/sandbox/run-cgroup';
import { ownerTag } from '../../src/process/owner-tag';
import { alive as isAlive, processesMarkedWith } from '../helpers/processes';
import { testIf } from '../helpers/skip';

// Every run's private directory goes here, so that "nothing is left" can be checked exactly.
const tmpRoot = mkdtempSync(join(tmpdir(), 'forge-contained-test-'));
chmodSync(tmpRoot, 0o711);
afterAll(() => rmSync(tmpRoot, { recursive: true, force: true }));

const MiB = 1024 * 1024;
const node = process.execPath;
const PATH = '/usr/local/bin:/usr/bin:/bin';

/** Processes alive (not zombies) among `pids`. */
const alive = (pids: number[]) => pids.filter(isAlive);

/** The run cgroups this process has left under its memory cgroup (none once every run has ended). */
const leftoverCgroups = () => {
  const { base } = runCgroupSupport();
  return base ? readdirSync(base.dir).filter((e) => e.startsWith(`forge-run-${ownerTag()}-`)) : [];
};

/**
 * Runs `argv` with a fresh marker in its environment (and so in every descendant's that keeps it); the heartbeat
 * records the host pids of the tree while it runs. Afterwards no process of it may be alive and nothing may be left.
 */
async function run(
  argv: (marker: string) => string[],
  limits: Partial<ContainedProcessOptions['limits']> = {},
  extra: Partial<ContainedProcessOptions> = {},
): Promise<{ result: ContainedProcessResult; seen: number[]; marker: string }> {
  const marker = `forge-test-${randomBytes(6).toString('hex')}`;
  const seen = new Set<number>();
  const result = await runContainedProcess({
    argv: argv(marker),
    cwd: tmpRoot,
    env: { PATH, FORGE_TEST_MARKER: marker },
    limits: { wallClockMs: 10_000, memoryBytes: 512 * MiB, outputBytes: MiB, ...limits },
    tmpDir: tmpRoot,
    onHeartbeat: () => processesMarkedWith(marker).forEach((p) => seen.add(p.pid)),
    heartbeatMs: 100,
    ...extra,
  });
  expect(processesMarkedWith(marker)).toEqual([]);
  expect(alive([...seen])).toEqual([]);
  expect(readdirSync(tmpRoot)).toEqual([]);
  expect(leftoverCgroups()).toEqual([]);
  return { result, seen: [...seen], marker };
}

test('a command that exits: its exit code, its output, and exactly the environment it was given', async () => {
  const { result } = await run(() => [
    node,
    '-e',
    'process.stdout.write(JSON.stringify(Object.keys(process.env).sort())); process.stderr.write("to stderr"); process.exitCode = 3',
  ]);
  expect(result).toMatchObject({ outcome: 'exited', exitCode: 3, signal: null });
  expect(result.error).toBeUndefined();
  expect(JSON.parse(result.stdout.head)).toEqual(['FORGE_SANDBOX_RUN', 'FORGE_TEST_MARKER', 'PATH', 'TMPDIR']);
  expect(result.stdout.truncated).toBe(false);
  expect(result.stderr).toEqual({ head: 'to stderr', tail: '', totalBytes: 9, truncated: false });
  expect(result.containment.memoryBound).toBe(runCgroupSupport().base ? 'cgroup' : 'sampled');
});

test('argv is never parsed by a shell, and argv[0] is found on the given PATH', async () => {
  const { result } = await run(() => ['printf', '%s|', 'a b', '$(id)', '; rm -rf /', '*']);
  expect(result).toMatchObject({ outcome: 'exited', exitCode: 0 });
  expect(result.stdout.head).toBe('a b|$(id)|; rm -rf /|*|');
});

/** A top process that forks grandchildren every way it can, says so, and then sleeps forever. */
const forker = (scrubbedEnv: boolean) => `const { spawn } = require('node:child_process');
const m = process.argv[1];
spawn('sh', ['-c', 'sleep 300; : ' + m], { stdio: 'ignore' });
spawn('setsid', ['sh', '-c', '(sleep 301; : ' + m + ') & sleep 302; : ' + m], { detached: true, stdio: 'ignore' }).unref();
${scrubbedEnv ? "spawn('env', ['-i', '/bin/sh', '-c', 'sleep 303; : ' + m], { detached: true, stdio: 'ignore' }).unref();" : ''}
for (let i = 0; i < 2; i++) spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)', m], { stdio: 'ignore' });
console.log('forked');
setInterval(() => {}, 1000);`;

test('a tree that forks grandchildren (backgrounded, setsid, detached, env scrubbed) and sleeps: timeout, and every pid of it is dead', async () => {
  const started = Date.now();
  const { result, seen } = await run((m) => [node, '-e', forker(true), m], { wallClockMs: 1500 });
  expect(result.outcome).toBe('timeout');
  expect(result.error).toMatch(/1500 ms/);
  expect(result.stdout.head).toBe('forked\n');
  expect(Date.now() - started).toBeLessThan(6000);
  // The top process, its shells and sleeps, two node children, and the launcher's own processes.
  expect(seen.length).toBeGreaterThanOrEqual(8);
  expect(result.resource.maxRssBytes).toBeGreaterThan(10 * MiB);
  expect(result.resource.cpuUserMicros).toBeGreaterThan(0);
});

// The fallback where namespaces are refused: the group is killed and strays hunted by marker. A descendant that both
// calls setsid() and scrubs its environment can escape it (containment.ts says so), so this tree keeps its environment.
test('the same tree in the process-group fallback: timeout, and every pid of it is dead', async () => {
  const { result, seen } = await run((m) => [node, '-e', forker(false), m], { wallClockMs: 1500 }, { containment: 'process-group' });
  expect(result).toMatchObject({ outcome: 'timeout', containment: { mode: 'process-group' } });
  expect(seen.length).toBeGreaterThanOrEqual(7);
});

// With a cgroup the kernel enforces the bound; without one (cgroup: false, or a host where Forge cannot make one)
// the tree's resident memory is sampled.
test.each([{ cgroup: true }, { cgroup: false }])(
  'a child process (not the top one) that allocates past the limit: oom, and the tree is dead (cgroup: $cgroup)',
  async ({ cgroup }) => {
    const top = `const { spawn } = require('node:child_process');
spawn(process.execPath, ['-e', 'const b = Buffer.alloc(400 * 1024 * 1024, 1); console.log("held"); setInterval(() => b[0]++, 1000)', process.argv[1]], { stdio: 'inherit' });
setInterval(() => {}, 1000);`;
    const started = Date.now();
    const { result } = await run((m) => [node, '-e', top, m], { memoryBytes: 200 * MiB, wallClockMs: 20_000 }, { cgroup });
    expect(result.outcome).toBe('oom');
    expect(result.error).toMatch(/limit of 200 MiB/);
    expect(result.containment.memoryBound).toBe(cgroup && runCgroupSupport().base ? 'cgroup' : 'sampled');
    expect(Date.now() - started).toBeLessThan(10_000);
  },
);

// The limit sits on the run's cgroup and the tree one level below it, so Node reads no limit of its own and sizes V8's
// heap as outside (run-cgroup.ts says why); the kernel still bounds the tree (the test above).
const nested = runCgroupSupport().base?.nested;
testIf(nested, 'no nested memory cgroup here')('a node in the tree sizes its heap as it does outside the cgroup', async () => {
  const probe = 'process.stdout.write(JSON.stringify({ constrained: process.constrainedMemory(), heap: require("v8").getHeapStatistics().heap_size_limit }))';
  const outside = JSON.parse(execFileSync(node, ['-e', probe], { env: { PATH } }).toString()) as { constrained: number; heap: number };
  const { result } = await run(() => [node, '-e', probe], { memoryBytes: 256 * MiB });
  expect(result).toMatchObject({ outcome: 'exited', exitCode: 0, containment: { memoryBound: 'cgroup' } });
  const inside = JSON.parse(result.stdout.head) as { constrained: number; heap: number };
  expect(inside.constrained).not.toBe(256 * MiB);
  expect(inside.heap).toBe(outside.heap);
});

test('an output flood: output-limit, and only the head and the tail are kept', async () => {
  const { result } = await run(() => ['sh', '-c', 'echo BEGIN; exec yes flood'], { outputBytes: MiB, keepBytes: 4096 });
  expect(result.outcome).toBe('output-limit');
  expect(result.error).toMatch(/over the 1048576-byte limit/);
  expect(result.stdout.head).toBe(('BEGIN\n' + 'flood\n'.repeat(400)).slice(0, 2048));
  expect(result.stdout.tail).toMatch(/^[flod\n]{2048}$/);
  expect(result.stdout.truncated).toBe(true);
  expect(result.stdout.totalBytes).toBeGreaterThan(MiB);
});

test('output under the limit but over what is kept: the head and the tail survive, the middle is dropped', async () => {
  const script = 'process.stdout.write("BEGIN " + "y".repeat(100_000) + " END")';
  const { result } = await run(() => [node, '-e', script], { keepBytes: 1000 });
  expect(result.outcome).toBe('exited');
  expect(result.stdout.head.startsWith('BEGIN yyy')).toBe(true);
  expect(result.stdout.tail.endsWith('yyy END')).toBe(true);
  expect(result.stdout.head.length + result.stdout.tail.length).toBe(1000);
  expect(result.stdout).toMatchObject({ totalBytes: 100_010, truncated: true });
});

test('cancellation through an AbortSignal kills the tree: killed', async () => {
  const controller = new AbortController();
  setTimeout(() => controller.abort(), 300);
  const started = Date.now();
  const { result, seen } = await run((m) => ['sh', '-c', `sleep 300 & sleep 301; : ${m}`], { wallClockMs: 20_000 }, { signal: controller.signal });
  expect(result.outcome).toBe('killed');
  expect(Date.now() - started).toBeLessThan(3000);
  expect(seen.length).toBeGreaterThanOrEqual(2);
});

test('a command that does not exist, or a cwd that does not: spawn-error, and nothing is started', async () => {
  const missing = await run(() => ['forge-no-such-binary-anywhere', '--help']);
  expect(missing.result).toMatchObject({ outcome: 'spawn-error', exitCode: null, signal: null });
  expect(missing.result.error).toMatch(/forge-no-such-binary-anywhere was not found on PATH/);
  const byPath = await run(() => ['/nonexistent/bin/tool']);
  expect(byPath.result.outcome).toBe('spawn-error');
  const noCwd = await run(() => [node, '-e', '0'], {}, { cwd: join(tmpRoot, 'not-there') });
  expect(noCwd.result.outcome).toBe('spawn-error');
  expect(noCwd.result.error).toMatch(/working directory/);
  expect(existsSync(join(tmpRoot, 'not-there'))).toBe(false);
});

test('a command killed by a signal reports the signal', async () => {
  const { result } = await run(() => ['sh', '-c', 'kill -SEGV $$']);
  expect(result).toMatchObject({ outcome: 'exited', exitCode: null, signal: 'SIGSEGV' });
});
