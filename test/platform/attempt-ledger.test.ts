import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Client } from '@temporalio/client';
import { readdir } from 'node:fs/promises';
import { attemptsDirOf, handBackDeadWorkersAttempts } from '../../src/platform/attempt-ledger';
import { until } from '../chaos/end-state';
import { chaosTool } from '../chaos/matrix/scenarios';
import { startTestPlatform, useTemporal, type TestPlatform } from '../helpers/platform';
import { testIf } from '../helpers/skip';

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

testIf(linux, 'Linux only: elsewhere the identity is the pid alone (no /proc start time, no zombie state)')(
  'a live worker’s directory stays; a gone one’s, a reused pid’s and a zombie’s are removed',
  async () => {
    // Skipped off Linux: the identity there is the pid alone (no /proc start time, no zombie state).
    const exited = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' });
    const gone = Number(exited.stdout);
    // A zombie: perl's child exits at once and perl never waits for it. (A shell's `sleep 0 & exec sleep 30` raced:
    // the shell could reap its child before the exec, and the pid was gone.)
    const parent = spawn('perl', ['-e', '$| = 1; my $pid = fork() // die; exit 0 unless $pid; print "$pid\\n"; sleep 30'], {
      stdio: ['ignore', 'pipe', 'ignore'],
    });
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
  },
);

test('no directory yet: nothing to hand back', async () => {
  await expect(handBackDeadWorkersAttempts(path.join(dir, 'missing'), unusedClient)).resolves.toEqual({ workers: 0, attempts: [], errors: [] });
});

describe('with a real worker and a real run', () => {
  // The guarantee's other half: a live worker's attempts are never handed back. A hand-back of one would make
  // Temporal start the step again while it still runs (two sandbox tests, two commits racing).
  const temporal = useTemporal();
  let platform: TestPlatform;
  beforeAll(async () => {
    // The sandbox queue's attempts are the ones on file: the test does not run in the workflow task here.
    platform = await startTestPlatform(temporal(), 'pglite', { env: { FORGE_SANDBOX_TEST_HERE: 'off' } });
  }, 120_000);
  afterAll(() => platform?.teardown());

  test('a hand-back while a live worker runs an attempt leaves it alone: the run ends on its first attempt', async () => {
    const ledger = attemptsDirOf(platform.config.home);
    const handle = await platform.forge.startDeployTool({ name: 'chaos_tool', source: chaosTool('live'), testInput: { ms: 2_000 } });
    // The sandbox test's attempt is on file in this process's own directory while it runs.
    await until(
      async () => (await readdir(ledger, { recursive: true }).catch(() => [] as string[])).some((f) => f.endsWith('.json')),
      20_000,
      'the attempt on file',
    );
    expect(await handBackDeadWorkersAttempts(ledger, platform.env.client)).toEqual({ workers: 0, attempts: [], errors: [] });
    await expect(handle.result()).resolves.toMatchObject({ status: 'active', version: 1 });
    const history = await platform.env.client.workflow.getHandle(handle.workflowId, handle.runId).fetchHistory();
    const started = history.events!.map((e) => e.activityTaskStartedEventAttributes).filter((a) => a);
    expect(started.map((a) => a!.attempt)).toEqual([1]);
  }, 60_000);
});
