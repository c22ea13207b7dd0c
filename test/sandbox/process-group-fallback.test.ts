import { chmodSync, readFileSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { containment, runSandbox, sandboxCleanupsDone } from '../../src/sandbox';
import { processesMarkedWith } from '../helpers/processes';
import { testIf } from '../helpers/skip';

/**
 * The fallback for machines that refuse PID namespaces: a process group plus a hunt for the run's marker in /proc.
 * Forced here with the `containment` limit (what FORGE_SANDBOX_CONTAINMENT configures).
 * A descendant that both calls setsid() and scrubs its environment can escape this mode (src/sandbox/containment.ts
 * says so), so the detached child below keeps its environment.
 */
const source = (name: string) => readFileSync(join(__dirname, '..', 'fixtures', 'tools', `${name}.ts`), 'utf8');
const tempRoot = mkdtempSync(join(tmpdir(), 'forge-sandbox-pg-'));
chmodSync(tempRoot, 0o711); // traversable by the runs' own users, as /dev/shm and /tmp are

afterAll(async () => {
  await sandboxCleanupsDone(); // what runs clean up after their verdicts, before the root goes
  rmSync(tempRoot, { recursive: true, force: true });
});

const detachedKeepingEnv = `import { spawn } from 'node:child_process';
import { z } from 'zod';
export default {
  name: 'detached_keeping_env',
  inputSchema: z.object({ marker: z.string() }),
  async execute({ marker }: { marker: string }) {
    spawn('sh', ['-c', \`sleep 300; : \${marker}\`], { detached: true, stdio: 'ignore' }).unref();
    spawn('setsid', ['sh', '-c', \`(sleep 301; : \${marker}) &\`], { detached: true, stdio: 'ignore' }).unref();
    await new Promise((r) => setTimeout(r, 200));
    return { ok: true };
  },
};`;

test('the mode is in force', () => {
  expect(containment('process-group').mode).toBe('process-group');
});

const cases: { name: string; src: string; input: (marker: string) => unknown; status: string }[] = [
  { name: 'celsius_to_fahrenheit', src: source('celsius_to_fahrenheit'), input: () => ({ celsius: 1 }), status: 'passed' },
  { name: 'sync_loop', src: source('sync_loop'), input: () => ({}), status: 'timeout' },
  { name: 'offheap_bomb', src: source('offheap_bomb'), input: () => ({}), status: 'oom' },
  { name: 'many_children', src: source('many_children'), input: (m) => ({ marker: m, count: 30 }), status: 'passed' },
  { name: 'detached_keeping_env', src: detachedKeepingEnv, input: (m) => ({ marker: m }), status: 'passed' },
  { name: 'self_kill', src: source('self_kill'), input: () => ({}), status: 'crashed' },
];

test.each(cases)('$name ends $status and leaves nothing behind', async ({ name, src, input, status }) => {
  const marker = `forge-test-${randomBytes(6).toString('hex')}`;
  process.env.FORGE_TEST_MARKER = marker;
  const verdict = await runSandbox({
    name,
    source: src,
    input: input(marker),
    limits: { envPassthrough: ['FORGE_TEST_MARKER'], containment: 'process-group', tmpDir: tempRoot },
  });
  expect(verdict.status).toBe(status);
  expect(processesMarkedWith(marker)).toEqual([]);
  expect(readdirSync(tempRoot)).toEqual([]);
});

// Without a filesystem view, a run's user can write to the host's shared directories (its uid is its own as root).
// What it left there must be gone once its cleanup is done: here, and only here, Forge looks for it (run.ts).
testIf(process.getuid?.() === 0, 'not root: runs keep Forge’s user, whose own files in /tmp are not the run’s to judge')(
  'what a run left in the shared directories (/dev/shm, /tmp, /var/tmp) is removed after its verdict',
  async () => {
    const marker = `forge-test-${randomBytes(6).toString('hex')}`;
    const verdict = await runSandbox({
      name: 'leaves_files_outside',
      source: source('leaves_files_outside'),
      input: { marker },
      limits: { containment: 'process-group', tmpDir: tempRoot },
    });
    expect(verdict.status).toBe('passed');
    // It did leave them: each directory took its file and its nested directory.
    expect((verdict.output as { left: string[] }).left).toEqual(['/dev/shm', '/tmp', '/var/tmp']);
    await sandboxCleanupsDone();
    const name = [...marker].reverse().join(''); // as the fixture names what it leaves
    expect(['/dev/shm', '/tmp', '/var/tmp'].flatMap((dir) => readdirSync(dir).filter((e) => e.startsWith(name)))).toEqual([]);
  },
);
