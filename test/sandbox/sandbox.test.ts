import { chmodSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { containment, runSandbox, SandboxPool, sandboxCleanupsDone, type SandboxLimits, type SandboxStatus, type SandboxVerdict } from '../../src/sandbox';
import { harnessNodeFlags, HarnessSnapshots } from '../../src/sandbox/harness-snapshot';
import { resolveLimits } from '../../src/sandbox/limits';
import { PreloadSet } from '../../src/sandbox/preload';
import { processesMarkedWith } from '../helpers/processes';
import { runCgroupSupport } from '../../src/sandbox/run-cgroup';

const FIXTURES = join(__dirname, '..', 'fixtures', 'tools');
const source = (name: string) => readFileSync(join(FIXTURES, `${name}.ts`), 'utf8');

// Every run's private directory goes here, so that "no temp file is left" can be checked exactly.
const tempRoot = mkdtempSync(join(tmpdir(), 'forge-sandbox-test-'));
// Traversable by the runs' own users (mkdtemp makes it 0700), as /dev/shm and /tmp are.
chmodSync(tempRoot, 0o711);
/** The limits of a run of this file: its private directory under tempRoot (the sandbox's `tmpDir` option). */
const inTempRoot = (limits: Partial<SandboxLimits> = {}): Partial<SandboxLimits> => ({ tmpDir: tempRoot, ...limits });
// Beside the run directories, not in them: the leftover check reads tempRoot's run root.
const snapshotDir = mkdtempSync(join(tmpdir(), 'forge-sandbox-test-snapshots-'));
afterAll(() => rmSync(snapshotDir, { recursive: true, force: true }));
afterAll(async () => {
  await sandboxCleanupsDone(); // what runs clean up after their verdicts, before the root goes
  rmSync(tempRoot, { recursive: true, force: true });
});

interface Case {
  fixture: string;
  status: SandboxStatus;
  /** Upper bound on the run's wall time, generous for a loaded 2-core CI machine. */
  maxMs: number;
  input?: (marker: string) => unknown;
  limits?: Partial<SandboxLimits>;
  name?: string;
  /** The source, when it is not the fixture file as it is (then `title` says what it is). */
  sourceText?: () => string;
  title?: string;
  check?: (v: SandboxVerdict) => void | Promise<void>;
}

/** Resolves once `condition` holds (polled), or fails after `ms`. */
async function until(condition: () => boolean, ms = 10_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 10));
  }
}

/**
 * Runs one fixture with a fresh marker that its processes carry (environment passthrough, and the command line of the
 * fixtures that spawn), then asserts the verdict, the time bound, and that no process or temp file is left. `pooled`:
 * the run gets a harness a SandboxPool started beforehand, which has preloaded zod as the worker's spares do (the pool
 * is closed before the leftover check, since its replacement spare carries the marker too; a process the run left
 * behind is not one of the pool's).
 */
async function runCase(c: Case, pooled: false | 'spare' | 'snapshot' = false): Promise<SandboxVerdict> {
  const marker = `forge-test-${randomBytes(6).toString('hex')}`;
  process.env.FORGE_TEST_MARKER = marker;
  const limits = inTempRoot({ envPassthrough: ['FORGE_TEST_MARKER'], ...c.limits });
  const preload = new PreloadSet(['zod'], 8);
  let snapshots: HarnessSnapshots | undefined;
  if (pooled === 'snapshot') {
    snapshots = new HarnessSnapshots(snapshotDir);
    snapshots.blobFor(harnessNodeFlags(resolveLimits(limits)), preload.snapshotFiles());
    await snapshots.settled();
  }
  const pool = pooled ? new SandboxPool(limits, 1, { preload, snapshots }) : undefined;
  if (pool) await until(() => pool.ready === 1);
  const started = Date.now();
  const verdict = await runSandbox(
    { name: c.name ?? c.fixture, source: c.sourceText?.() ?? source(c.fixture), input: c.input ? c.input(marker) : {}, limits },
    { pool },
  );
  const wall = Date.now() - started;
  // A run refused before any process (compile error, request checks) leaves the spare unused.
  if (pool) expect(pool.served).toBe(verdict.diagnostics?.phase === 'compile' || verdict.diagnostics?.phase === 'request' ? 0 : 1);
  if (snapshots) expect(pool?.servedFromSnapshot).toBe(pool?.served);
  await pool?.close();
  expect({ fixture: c.fixture, status: verdict.status, error: verdict.error }).toMatchObject({ fixture: c.fixture, status: c.status });
  expect(wall).toBeLessThan(c.maxMs);
  expect(verdict.durationMs).toBeLessThanOrEqual(wall + 5);
  expect(processesMarkedWith(marker)).toEqual([]);
  expect(readdirSync(tempRoot)).toEqual([]);
  await c.check?.(verdict);
  return verdict;
}

/**
 * memory_across_children with its children allocating one after another, as they do on a loaded machine: the kernel
 * then kills children that have already answered (the largest processes), the tool never hears of it, and returns.
 */
const childrenInTurn = () => `import { spawn } from 'node:child_process';
import { z } from 'zod';
export default {
  name: 'memory_across_children',
  inputSchema: z.object({ marker: z.string() }),
  timeoutMs: 20_000,
  async execute({ marker }: { marker: string }) {
    const children = [0, 1, 2, 3].map((i) =>
      spawn(process.execPath, ['-e', \`setTimeout(() => { const b = Buffer.alloc(400 * 1024 * 1024, 7); console.log('held'); setInterval(() => b[0]++, 1000); }, \${i * 400})\`, marker], {
        stdio: ['ignore', 'pipe', 'ignore'],
      }),
    );
    await Promise.all(children.map((child) => new Promise((resolve, reject) => {
      child.stdout!.once('data', resolve);
      child.once('exit', (code, signal) => reject(new Error(\`a child ended (\${signal ?? code})\`)));
    })));
    return { held: children.length * 400 };
  },
};`;

/** A valid tool inside ~5 MB of comments. */
const fiveMegabyteSource = () => source('celsius_to_fahrenheit') + `\n// ${'p'.repeat(100)}`.repeat(50_000);

const cases: Case[] = [
  {
    fixture: 'celsius_to_fahrenheit',
    status: 'passed',
    maxMs: 5000,
    input: () => ({ celsius: 100 }),
    check: (v) => expect(v.output).toEqual({ fahrenheit: 212 }),
  },
  {
    fixture: 'uses_node_crypto',
    status: 'passed',
    maxMs: 5000,
    input: () => ({ text: 'abc' }),
    check: (v) => expect(v.output).toEqual({ sha256: 'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad' }),
  },
  { fixture: 'sync_loop', status: 'timeout', maxMs: 4000, check: (v) => expect(v.error).toMatch(/timeoutMs of 1000 ms/) },
  { fixture: 'never_settles', status: 'timeout', maxMs: 4000 },
  // The module never finishes loading, so the tool's own timeoutMs is never read: the platform maximum applies.
  { fixture: 'hanging_tla', status: 'timeout', maxMs: 5000, limits: { maxTimeoutMs: 1500 } },
  { fixture: 'heap_bomb', status: 'oom', maxMs: 20000, limits: { memoryMb: 128 } },
  { fixture: 'offheap_bomb', status: 'oom', maxMs: 5000, check: (v) => expect(v.error).toMatch(/memory/) },
  { fixture: 'offheap_creep', status: 'oom', maxMs: 10000 },
  ...(runCgroupSupport().base
    ? [
        {
          fixture: 'memory_across_children',
          status: 'oom' as const,
          maxMs: 20000,
          limits: { memoryMb: 128 },
          input: (m: string) => ({ marker: m }),
          check: (v: SandboxVerdict) => expect(v.error).toMatch(/processes together passed the run's memory limit of 1152 MiB/),
        },
        {
          fixture: 'memory_across_children',
          title: 'memory_across_children, its children allocating in turn (a loaded machine) → oom, though the tool returned',
          sourceText: childrenInTurn,
          status: 'oom' as const,
          maxMs: 20000,
          limits: { memoryMb: 128 },
          input: (m: string) => ({ marker: m }),
          check: (v: SandboxVerdict) => {
            // Usually the kernel kills a child that already reported (the tool returns all the same); on a very loaded
            // machine it may kill one still allocating, which the tool sees. Either way the verdict is oom.
            expect(v.error).toMatch(/processes together passed the run's memory limit of 1152 MiB/);
            expect(v.output).toBeUndefined();
          },
        },
      ]
    : []), // (Without a memory cgroup, as when Forge is not root, each process has only its own limit: nothing to show.)
  { fixture: 'stdout_flood', status: 'output_limit', maxMs: 5000 },
  { fixture: 'stderr_flood', status: 'output_limit', maxMs: 5000, check: (v) => expect(v.stderrTail!.length).toBeLessThanOrEqual(4096) },
  { fixture: 'exit_zero', status: 'crashed', maxMs: 5000, check: (v) => expect(v.error).toMatch(/before it sent a result/) },
  { fixture: 'exit_one', status: 'crashed', maxMs: 5000 },
  { fixture: 'fake_oom_banner', status: 'crashed', maxMs: 5000, check: (v) => expect(v.diagnostics?.exitCode).toBe(1) },
  { fixture: 'self_kill', status: 'crashed', maxMs: 5000 },
  {
    fixture: 'throws',
    status: 'failed',
    maxMs: 5000,
    check: (v) => {
      expect(v.error).toMatch(/TypeError: boom from execute/);
      // The stack names the submitted file and line, not the run's private directory.
      expect(v.diagnostics?.stack).toMatch(/^TypeError: boom from execute\n {4}at .*\(throws\.ts:2:\d+\)/);
    },
  },
  { fixture: 'rejects', status: 'failed', maxMs: 5000, check: (v) => expect(v.error).toMatch(/rejected on purpose/) },
  { fixture: 'rejects_undefined', status: 'failed', maxMs: 5000, check: (v) => expect(v.error).toMatch(/undefined/) },
  { fixture: 'bigint_result', status: 'failed', maxMs: 5000, check: (v) => expect(v.error).toMatch(/result\.total: a BigInt/) },
  { fixture: 'circular_result', status: 'failed', maxMs: 5000, check: (v) => expect(v.error).toMatch(/result\.self: a circular reference/) },
  { fixture: 'function_result', status: 'failed', maxMs: 5000, check: (v) => expect(v.error).toMatch(/result\.callback: a function/) },
  { fixture: 'missing_export', status: 'invalid', maxMs: 5000, check: (v) => expect(v.error).toMatch(/exports no tool/) },
  { fixture: 'wrong_name', status: 'invalid', maxMs: 5000, check: (v) => expect(v.error).toMatch(/"a_different_name".*"wrong_name"/) },
  { fixture: 'wrong_shape', status: 'invalid', maxMs: 5000, check: (v) => expect(v.error).toMatch(/inputSchema/) },
  {
    fixture: 'schema_fails',
    status: 'invalid',
    maxMs: 5000,
    input: () => ({ celsius: 'hot' }),
    check: (v) => expect(v.diagnostics?.schemaIssues?.map((i) => i.path.join('.'))).toEqual(['celsius', 'unit']),
  },
  { fixture: 'missing_package', status: 'failed', maxMs: 5000, check: (v) => expect(v.error).toMatch(/forge-no-such-package-anywhere/) },
  { fixture: 'detached_grandchild', status: 'passed', maxMs: 5000, input: (m) => ({ marker: m }) },
  { fixture: 'deep_dir', status: 'passed', maxMs: 5000 },
  ...(process.getuid?.() === 0
    ? [
        {
          fixture: 'leaves_files_outside',
          status: 'passed' as const,
          maxMs: 5000,
          input: (m: string) => ({ marker: m }),
          check: (v: SandboxVerdict) => {
            // Its /tmp and /var/tmp are its own (tmpfs in its mount namespace); the host's /dev/shm is not in its view.
            expect((v.output as { left: string[] }).left).toEqual(['/tmp', '/var/tmp']);
            // None of it ever reached the host's shared directories: nothing to remove, even right after the verdict.
            const name = [...process.env.FORGE_TEST_MARKER!].reverse().join(''); // as the fixture names its files
            expect(['/dev/shm', '/tmp', '/var/tmp'].flatMap((dir) => readdirSync(dir).filter((e) => e.startsWith(name)))).toEqual([]);
          },
        },
      ]
    : []), // (Without root a run keeps Forge's user, whose own files in /tmp are not the run's to judge.)
  { fixture: 'interval_after_return', status: 'passed', maxMs: 5000, check: (v) => expect(v.output).toEqual({ ok: true }) },
  { fixture: 'many_children', status: 'passed', maxMs: 8000, input: (m) => ({ marker: m, count: 100 }) },
  { fixture: 'forged_verdict', status: 'failed', maxMs: 5000, check: (v) => expect(v.error).toMatch(/I failed, whatever I printed/) },
  { fixture: 'forged_then_exit', status: 'crashed', maxMs: 5000 },
  { fixture: 'forged_with_stolen_secret', status: 'failed', maxMs: 5000, check: (v) => expect(v.error).toMatch(/found \d+ secrets/) },
  { fixture: 'forged_by_binding_hook', status: 'failed', maxMs: 5000, check: (v) => expect(v.error).toMatch(/caught [1-9]\d* frames, and failed/) },
  // It took the harness's channel, so the harness's report of its failure never reached the parent: no result.
  { fixture: 'forged_by_fd_swap', status: 'crashed', maxMs: 5000, check: (v) => expect(v.error).toMatch(/before it sent a result/) },
  { fixture: 'forged_by_mac_oracle', status: 'crashed', maxMs: 5000, check: (v) => expect(v.error).toMatch(/before it sent a result/) },
  { fixture: 'forged_by_promise_hijack', status: 'failed', maxMs: 5000, check: (v) => expect(v.error).toMatch(/whatever await was told/) },
  { fixture: 'forged_partial_frame', status: 'failed', maxMs: 5000, check: (v) => expect(v.error).toMatch(/whatever I left on the channel/) },
  {
    fixture: 'huge_error',
    status: 'failed',
    maxMs: 5000,
    check: (v) => {
      expect(v.error).toMatch(/^the tool's execute threw or rejected: Error: too much to say x+…$/);
      expect(v.error!.length).toBeLessThan(8200);
      expect(v.diagnostics!.stack!.length).toBeLessThanOrEqual(4001);
    },
  },
  {
    fixture: 'big_result',
    status: 'passed',
    maxMs: 5000,
    input: () => ({ bytes: 1024 * 1024 }),
    check: (v) => {
      const out = v.output as { blob: string; end: string };
      expect(out.blob.length).toBe(1024 * 1024);
      expect(out.end).toBe('END');
    },
  },
  {
    fixture: 'big_result',
    status: 'failed',
    maxMs: 5000,
    input: () => ({ bytes: 5 * 1024 * 1024 }),
    check: (v) => expect(v.error).toMatch(/over the 4194304-byte limit/),
  },
  {
    fixture: 'celsius_to_fahrenheit',
    title: 'a 5 MB source → passed',
    sourceText: fiveMegabyteSource,
    status: 'passed',
    maxMs: 8000,
    input: () => ({ celsius: 0 }),
    check: (v) => expect(v.output).toEqual({ fahrenheit: 32 }),
  },
  { fixture: 'chatty_valid', status: 'passed', maxMs: 5000, input: () => ({ lines: 5000 }), check: (v) => expect(v.stderrTail).toMatch(/a warning/) },
  {
    fixture: 'syntax_error',
    status: 'failed',
    maxMs: 2000,
    check: (v) => {
      expect(v.diagnostics?.compileErrors?.[0].location).toMatchObject({ line: 5, column: 36 });
      expect(v.error).toMatch(/syntax_error\.ts:5:36/);
    },
  },
];

describe('sandbox verdicts on hostile tools', () => {
  test.each(cases.map((c) => [c.title ?? `${c.fixture} → ${c.status}`, c] as const))('%s', async (_title, c) => {
    await runCase(c);
  });
});

describe('the same verdicts from a harness started ahead of the run, with zod preloaded (SandboxPool)', () => {
  test.each(cases.map((c) => [c.title ?? `${c.fixture} → ${c.status}`, c] as const))('%s', async (_title, c) => {
    await runCase(c, 'spare');
  });
});

describe('the same verdicts from a harness started from a startup snapshot with zod loaded (HarnessSnapshots)', () => {
  test.each(cases.map((c) => [c.title ?? `${c.fixture} → ${c.status}`, c] as const))('%s', async (_title, c) => {
    await runCase(c, 'snapshot');
  });
});

describe('SandboxPool', () => {
  const uptimeTool = `import { z } from 'zod';
export default {
  name: 'uptime', description: 'Reports how long its process has existed.', inputSchema: z.object({ waitMs: z.number() }), timeoutMs: 1000,
  async execute(input: { waitMs: number }) { await new Promise((r) => setTimeout(r, input.waitMs)); return { uptimeMs: process.uptime() * 1000, env: process.env.FORGE_TEST_MARKER ?? null }; },
};`;
  const run = (pool: SandboxPool, waitMs = 0) =>
    runSandbox({ name: 'uptime', source: uptimeTool, input: { waitMs }, limits: inTempRoot({ envPassthrough: ['FORGE_TEST_MARKER'] }) }, { pool });

  test('a run gets a process started before it, its clock starts with the run, and a replacement is started', async () => {
    process.env.FORGE_TEST_MARKER = 'pool-clock';
    const pool = new SandboxPool(inTempRoot({ envPassthrough: ['FORGE_TEST_MARKER'] }), 1);
    try {
      await until(() => pool.ready === 1);
      await new Promise((r) => setTimeout(r, 1500)); // the spare waits longer than the tool's own timeoutMs
      const v = await run(pool, 300);
      expect(v.status).toBe('passed');
      const { uptimeMs, env } = v.output as { uptimeMs: number; env: string };
      expect(uptimeMs).toBeGreaterThan(1500); // the process existed well before the run began
      expect(env).toBe('pool-clock');
      expect(pool.served).toBe(1);
      await until(() => pool.ready === 1); // its replacement
    } finally {
      await pool.close();
    }
    expect(processesMarkedWith('pool-clock')).toEqual([]);
    expect(readdirSync(tempRoot)).toEqual([]);
  });

  test('a spare killed from outside, or started with an environment that changed since, is never handed out', async () => {
    process.env.FORGE_TEST_MARKER = 'pool-old';
    const pool = new SandboxPool(inTempRoot({ envPassthrough: ['FORGE_TEST_MARKER'] }), 1);
    try {
      await until(() => pool.ready === 1);
      // Kill the spare's Node process (the leaf of its launcher chain, once it exists): the rest of the chain ends
      // with it. Killing the chain from the top while it is still forking could orphan the leaf.
      const harnessNode = () => processesMarkedWith('pool-old').filter((p) => p.cmdline.startsWith(process.execPath));
      await until(() => harnessNode().length === 1);
      process.kill(harnessNode()[0].pid, 'SIGKILL');
      await until(() => processesMarkedWith('pool-old').length === 0);
      // Whether the spare's death was noticed before the run took it or only when it never read the run, the tool
      // runs in a fresh process and passes.
      const afterKill = await run(pool);
      expect(afterKill.status).toBe('passed');
      const servedBefore = pool.served;

      await until(() => pool.ready === 1);
      process.env.FORGE_TEST_MARKER = 'pool-new';
      const afterChange = await run(pool);
      expect(afterChange.status).toBe('passed');
      expect((afterChange.output as { env: string }).env).toBe('pool-new');
      expect(pool.served).toBe(servedBefore);
      await until(() => pool.ready === 1);
      const fromNewSpare = await run(pool);
      expect((fromNewSpare.output as { env: string }).env).toBe('pool-new');
      expect(pool.served).toBe(servedBefore + 1);
    } finally {
      await pool.close();
    }
    expect(processesMarkedWith('pool-old')).toEqual([]);
    expect(processesMarkedWith('pool-new')).toEqual([]);
    expect(readdirSync(tempRoot)).toEqual([]);
  });

  test('with startWhen, no spare starts before it settles, and they start after, even when it fails', async () => {
    process.env.FORGE_TEST_MARKER = 'pool-deferred';
    for (const settle of ['resolve', 'reject'] as const) {
      let release!: () => void;
      const startWhen = new Promise<void>((resolve, reject) => (release = settle === 'resolve' ? resolve : () => reject(new Error('no workers'))));
      const pool = new SandboxPool(inTempRoot({ envPassthrough: ['FORGE_TEST_MARKER'] }), 1, { startWhen });
      try {
        await new Promise((r) => setTimeout(r, 500));
        // No harness process exists yet: nothing was started ahead.
        expect(processesMarkedWith('pool-deferred').filter((p) => p.cmdline.startsWith(process.execPath))).toEqual([]);
        expect(pool.ready).toBe(0);
        release();
        await until(() => pool.ready === 1);
        expect((await run(pool)).status).toBe('passed');
        expect(pool.served).toBe(1);
      } finally {
        await pool.close();
      }
    }
    expect(processesMarkedWith('pool-deferred')).toEqual([]);
    expect(readdirSync(tempRoot)).toEqual([]);
  });

  test('a taken spare is replaced only after a delay while another is ready, at once when it was the last; close() cancels the wait', async () => {
    process.env.FORGE_TEST_MARKER = 'pool-replace';
    const harnesses = () => processesMarkedWith('pool-replace').filter((p) => p.cmdline.startsWith(process.execPath));
    const replaceAfterMs = 4000;
    const pool = new SandboxPool(inTempRoot({ envPassthrough: ['FORGE_TEST_MARKER'] }), 2, { replaceAfterMs });
    try {
      await until(() => pool.ready === 2);
      // One run: another spare is ready, so no third process boots beside the run (a deployment's test runs beside
      // its type check; a boot then is a third process on two cores). It comes once the delay is over.
      const taken = Date.now();
      expect((await run(pool)).status).toBe('passed');
      await new Promise((r) => setTimeout(r, 1500));
      expect(Date.now() - taken).toBeLessThan(replaceAfterMs);
      expect(pool.ready).toBe(1);
      expect(harnesses()).toHaveLength(1);
      await until(() => pool.ready === 2);
      expect(Date.now() - taken).toBeGreaterThanOrEqual(replaceAfterMs);

      // Two runs at once: the second takes the last spare, and both replacements boot at once (back-to-back runs
      // never wait for the delay).
      const both = Date.now();
      const verdicts = await Promise.all([run(pool, 200), run(pool, 200)]);
      expect(verdicts.map((v) => v.status)).toEqual(['passed', 'passed']);
      expect(pool.served).toBe(3);
      await until(() => pool.ready === 2);
      expect(Date.now() - both).toBeLessThan(replaceAfterMs);

      // A replacement still waiting when the pool closes never boots.
      expect((await run(pool)).status).toBe('passed');
      expect(pool.ready).toBe(1);
    } finally {
      await pool.close();
    }
    await new Promise((r) => setTimeout(r, replaceAfterMs + 500));
    expect(processesMarkedWith('pool-replace')).toEqual([]);
    expect(readdirSync(tempRoot)).toEqual([]);
  });

  test('a run with other boot-time limits starts its own process; after close() runs still work and nothing is left', async () => {
    process.env.FORGE_TEST_MARKER = 'pool-close';
    const pool = new SandboxPool(inTempRoot({ envPassthrough: ['FORGE_TEST_MARKER'] }), 2);
    await until(() => pool.ready === 2);
    const other = await runSandbox(
      { name: 'uptime', source: uptimeTool, input: { waitMs: 0 }, limits: inTempRoot({ envPassthrough: ['FORGE_TEST_MARKER'], memoryMb: 256 }) },
      { pool },
    );
    expect(other.status).toBe('passed');
    expect(pool.served).toBe(0);
    expect(pool.ready).toBe(2);
    await pool.close();
    await pool.close(); // idempotent
    expect(processesMarkedWith('pool-close')).toEqual([]);
    expect(readdirSync(tempRoot)).toEqual([]);
    expect((await run(pool)).status).toBe('passed');
    expect(pool.served).toBe(0);
    expect(processesMarkedWith('pool-close')).toEqual([]);
  });
});

describe('sandbox limits and environment', () => {
  test('a source over the source limit is invalid before anything starts', async () => {
    const big = fiveMegabyteSource();
    expect(Buffer.byteLength(big)).toBeGreaterThan(5_000_000); // the corpus case above runs this one under the default
    const tooBig = await runSandbox({ name: 'celsius_to_fahrenheit', source: big, input: { celsius: 0 }, limits: inTempRoot({ sourceBytes: 1_000_000 }) });
    expect(tooBig).toMatchObject({ status: 'invalid', diagnostics: { phase: 'request', limit: { kind: 'sourceBytes', value: 1_000_000 } } });
    expect(tooBig.error).toMatch(/over the 1000000-byte limit/);
    expect(tooBig.durationMs).toBeLessThan(100);
    expect(readdirSync(tempRoot)).toEqual([]);
  });

  test('the tool sees none of the parent environment but what is passed through, and a private cwd', async () => {
    process.env.FORGE_TEST_SECRET_TOKEN = 'sk-do-not-leak';
    process.env.FORGE_TEST_ALLOWED = 'visible';
    try {
      const v = await runSandbox({ name: 'reads_env', source: source('reads_env'), input: {}, limits: inTempRoot({ envPassthrough: ['FORGE_TEST_ALLOWED'] }) });
      expect(v.status).toBe('passed');
      const { env, cwd } = v.output as { env: Record<string, string>; cwd: string };
      expect(JSON.stringify(env)).not.toContain('sk-do-not-leak');
      expect(env.FORGE_TEST_ALLOWED).toBe('visible');
      expect(env.NODE_OPTIONS).toBeUndefined();
      expect(cwd.startsWith(join(tempRoot, 'forge-sbx-'))).toBe(true);
    } finally {
      delete process.env.FORGE_TEST_SECRET_TOKEN;
      delete process.env.FORGE_TEST_ALLOWED;
    }
  });

  const asRoot = process.getuid?.() === 0;
  const privileges = `import { accessSync, constants, readFileSync } from 'node:fs';
import { z } from 'zod';
const attempt = (fn: () => unknown) => { try { fn(); return 'allowed'; } catch (err) { return (err as NodeJS.ErrnoException).code; } };
export default {
  name: 'privileges',
  inputSchema: z.object({ forgePid: z.number(), harness: z.string() }),
  async execute({ forgePid, harness }: { forgePid: number; harness: string }) {
    return {
      uid: process.getuid!(),
      forgeEnvironment: attempt(() => readFileSync('/proc/' + forgePid + '/environ')),
      writeHarness: attempt(() => accessSync(harness, constants.W_OK)),
      ownMemory: attempt(() => readFileSync('/proc/self/mem', { flag: 'r' })),
      // Its /proc shows its own namespace only: Forge's pid is not there at all.
      seesForge: attempt(() => readFileSync('/proc/' + forgePid + '/cmdline')),
    };
  },
};`;

  // Without root there is no other user to switch to: the tool keeps Forge's (and the test says so, not skips).
  test(
    asRoot
      ? "the tool runs as a user of its own: Forge's environment, the harness and its own memory are closed to it"
      : "without root, the tool runs as Forge's own user",
    async () => {
      const harness = join(__dirname, '..', '..', 'src', 'sandbox', 'harness.cjs');
      const [a, b] = await Promise.all(
        [0, 1].map(() => runSandbox({ name: 'privileges', source: privileges, input: { forgePid: process.pid, harness }, limits: inTempRoot() })),
      );
      expect(a.status).toBe('passed');
      const out = a.output as { uid: number; forgeEnvironment: string; writeHarness: string; ownMemory: string };
      if (!asRoot) {
        expect(out.uid).toBe(process.getuid?.());
        return;
      }
      expect(out.uid).toBeGreaterThanOrEqual(2_100_000_000);
      expect((b.output as { uid: number }).uid).not.toBe(out.uid); // two runs at once, two users
      expect(out).toMatchObject({ forgeEnvironment: expect.stringMatching(/^(EACCES|ENOENT)$/), writeHarness: 'EACCES', ownMemory: 'EACCES' });
      if (containment().privateProc) expect((a.output as { seesForge: string }).seesForge).toBe('ENOENT');
      const same = await runSandbox({
        name: 'privileges',
        source: privileges,
        input: { forgePid: process.pid, harness },
        limits: inTempRoot({ userIdBase: 0 }),
      });
      expect((same.output as { uid: number }).uid).toBe(0);
    },
  );

  test('a sandbox directory under directories its own user could not traverse on the host still works: the view holds only the run directory', async () => {
    const closed = mkdtempSync(join(tmpdir(), 'forge-sandbox-closed-')); // 0700, Forge's
    try {
      const v = await runSandbox({ name: 'celsius_to_fahrenheit', source: source('celsius_to_fahrenheit'), input: { celsius: 1 }, limits: { tmpDir: closed } });
      expect(v).toMatchObject({ status: 'passed', output: { fahrenheit: 33.8 } });
      expect(readdirSync(closed)).toEqual([]);
    } finally {
      rmSync(closed, { recursive: true, force: true });
    }
  });

  test('what another run plants above the run directories is never loaded: a package.json naming itself zod, a node_modules', async () => {
    // Any run can write to the directory the run directories live in (/dev/shm by default): stand in for one.
    writeFileSync(join(tempRoot, 'package.json'), JSON.stringify({ name: 'zod', exports: { '.': './planted.cjs' } }));
    writeFileSync(join(tempRoot, 'planted.cjs'), 'throw new Error("planted code ran");');
    mkdirSync(join(tempRoot, 'node_modules', 'forge-no-such-package-anywhere'), { recursive: true });
    writeFileSync(join(tempRoot, 'node_modules', 'forge-no-such-package-anywhere', 'index.js'), 'throw new Error("planted code ran");');
    try {
      const v = await runSandbox({ name: 'celsius_to_fahrenheit', source: source('celsius_to_fahrenheit'), input: { celsius: 100 }, limits: inTempRoot() });
      expect(v).toMatchObject({ status: 'passed', output: { fahrenheit: 212 } });
      const missing = await runSandbox({ name: 'missing_package', source: source('missing_package'), input: {}, limits: inTempRoot() });
      expect(missing.status).toBe('failed');
      expect(missing.error).toMatch(/Cannot find module 'forge-no-such-package-anywhere'/);
    } finally {
      for (const planted of ['package.json', 'planted.cjs', 'node_modules']) rmSync(join(tempRoot, planted), { recursive: true, force: true });
    }
  });

  test('an invalid name is refused before compiling', async () => {
    const v = await runSandbox({ name: '../etc', source: source('celsius_to_fahrenheit') });
    expect(v).toMatchObject({ status: 'invalid', diagnostics: { phase: 'request' } });
  });

  test('cancellation through an AbortSignal kills the tree and ends as timeout', async () => {
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 300);
    const started = Date.now();
    const v = await runSandbox({
      name: 'never_settles',
      source: source('never_settles'),
      input: {},
      signal: controller.signal,
      limits: inTempRoot({ maxTimeoutMs: 20_000 }),
    });
    expect(v.status).toBe('timeout');
    expect(Date.now() - started).toBeLessThan(3000);
    expect(readdirSync(tempRoot)).toEqual([]);
  });

  test('several sandboxes at once do not interfere', async () => {
    const marker = `forge-test-${randomBytes(6).toString('hex')}`;
    process.env.FORGE_TEST_MARKER = marker;
    const limits = inTempRoot({ envPassthrough: ['FORGE_TEST_MARKER'] });
    const runs = await Promise.all([
      ...[0, 10, 20, 30, 40, 50].map((c) =>
        runSandbox({ name: 'celsius_to_fahrenheit', source: source('celsius_to_fahrenheit'), input: { celsius: c }, limits }),
      ),
      runSandbox({ name: 'throws', source: source('throws'), input: {}, limits }),
      runSandbox({ name: 'many_children', source: source('many_children'), input: { marker, count: 20 }, limits }),
      runSandbox({ name: 'sync_loop', source: source('sync_loop'), input: {}, limits }),
    ]);
    expect(runs.map((r) => r.status)).toEqual(['passed', 'passed', 'passed', 'passed', 'passed', 'passed', 'failed', 'passed', 'timeout']);
    expect(runs.slice(0, 6).map((r) => (r.output as { fahrenheit: number }).fahrenheit)).toEqual([32, 50, 68, 86, 104, 122]);
    expect(processesMarkedWith(marker)).toEqual([]);
    expect(readdirSync(tempRoot)).toEqual([]);
  });
});
