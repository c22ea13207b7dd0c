import { createHash } from 'node:crypto';
import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { HarnessSnapshots, harnessNodeFlags } from '../../src/sandbox/harness-snapshot';
import { resolveLimits } from '../../src/sandbox/limits';
import { harnessPath, packageRoot } from '../../src/sandbox/paths';
import { runSandbox, SandboxPool, type SandboxLimits } from '../../src/sandbox';
import { PreloadSet } from '../../src/sandbox/preload';
import type * as SandboxModule from '../../src/sandbox';
import type * as SnapshotModule from '../../src/sandbox/harness-snapshot';
import type * as PreloadModule from '../../src/sandbox/preload';

/**
 * Spares started from a startup snapshot of the harness with zod already loaded (src/sandbox/harness-snapshot.ts).
 * The snapshot is shared by every run: what is checked here is that no run can change what the next one starts
 * from, that a directory someone else could write is never used, and that runs from it behave as runs without it
 * (test/sandbox/sandbox.test.ts runs its hostile fixtures from one too).
 */
const tempRoot = mkdtempSync(join(tmpdir(), 'forge-snapshot-test-'));
afterAll(() => rmSync(tempRoot, { recursive: true, force: true }));
const limits: Partial<SandboxLimits> = { tmpDir: tempRoot };

const sha256 = (file: string) => createHash('sha256').update(readFileSync(file)).digest('hex');

async function until(condition: () => boolean, ms = 30_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** Where `snapshots` keeps the blob of this file's runs (zod preloaded, the default memory size). */
const blobOf = (snapshots: HarnessSnapshots) => snapshots.pathFor(harnessNodeFlags(resolveLimits(limits)), new PreloadSet(['zod'], 4).snapshotFiles())!;

/** A pool of `size` spares that start from a snapshot in `snapshots`, built before it is returned. */
async function snapshotPool(snapshots: HarnessSnapshots, extra: Partial<SandboxLimits> = {}, size = 1): Promise<SandboxPool> {
  const preload = new PreloadSet(['zod'], 4);
  const flags = harnessNodeFlags(resolveLimits(limits));
  snapshots.blobFor(flags, preload.snapshotFiles());
  await snapshots.settled();
  expect(snapshots.lastFailure).toBeUndefined();
  return new SandboxPool({ ...limits, ...extra }, size, { preload, snapshots });
}

/** Returns what the tool saw of its own start (its snapshot blob, if any) and whether zod still validates. */
const probeTool = (name: string, body: string) => `import { z } from 'zod';
export default {
  name: '${name}',
  description: 'A probe of the process it runs in.',
  inputSchema: z.object({ n: z.number() }),
  async execute({ n }: { n: number }) {
    const at = process.execArgv.indexOf('--snapshot-blob');
    const blob = at >= 0 ? process.execArgv[at + 1] : null;
    ${body}
    return { n, blob, rejectsText: !z.object({ n: z.number() }).safeParse({ n: 'text' }).success };
  },
};`;

test('a snapshot is built once, in a directory of this user’s alone, and spares start from it with zod loaded', async () => {
  const dir = join(tempRoot, 'snapshots-a');
  const snapshots = new HarnessSnapshots(dir);
  const pool = await snapshotPool(snapshots);
  try {
    const stat = statSync(dir);
    expect(stat.mode & 0o777).toBe(0o700);
    expect(stat.uid).toBe(process.getuid!());
    await until(() => pool.ready === 1);
    const verdict = await runSandbox({ name: 'probe', source: probeTool('probe', ''), input: { n: 1 }, limits }, { pool });
    expect(verdict).toMatchObject({ status: 'passed', output: { n: 1, rejectsText: true } });
    expect((verdict.output as { blob: string }).blob).toMatch(new RegExp(`^${dir}/[0-9a-f]{32}\\.blob$`));
    expect(pool.servedFromSnapshot).toBe(1);
    // An invalid input is still refused by the snapshot's zod, before execute.
    await until(() => pool.ready === 1);
    const refused = await runSandbox({ name: 'probe', source: probeTool('probe', ''), input: { n: 'x' }, limits }, { pool });
    expect(refused.status).toBe('invalid');
    expect(pool.servedFromSnapshot).toBe(2);
  } finally {
    await pool.close();
  }
}, 120_000);

// As its own user (root's workers), and as Forge's own user (userIdBase 0, or a worker not run as root), where only
// the read-only view stands between the tool and the file.
test.each<[string, Partial<SandboxLimits>]>([
  ['as the run’s own user', {}],
  ['as Forge’s user', { userIdBase: 0 }],
])(
  'a tool can neither rewrite the blob nor leave its changes to zod to the next run (%s)',
  async (_as, runAs) => {
    const dir = join(tempRoot, `snapshots-b-${runAs.userIdBase ?? 'own'}`);
    const snapshots = new HarnessSnapshots(dir);
    const pool = await snapshotPool(snapshots, runAs);
    try {
      await until(() => pool.ready === 1);
      // The attacker: writes over the blob it started from, renames something over it, and makes zod accept anything in
      // its own process (the shared module's prototypes).
      const attack = `
    const fs = await import('node:fs');
    const tried: Record<string, string> = {};
    for (const [what, act] of [
      ['write', () => fs.writeFileSync(blob!, 'planted')],
      ['append', () => fs.appendFileSync(blob!, 'planted')],
      ['rename', () => { fs.writeFileSync('planted.blob', 'planted'); fs.renameSync('planted.blob', blob!); }],
      ['chmod', () => fs.chmodSync(blob!, 0o666)],
    ] as const) {
      try { act(); tried[what] = 'done'; } catch (err) { tried[what] = (err as NodeJS.ErrnoException).code ?? 'error'; }
    }
    const proto = Object.getPrototypeOf(z.number());
    for (const key of ['parse', 'safeParse']) Object.defineProperty(proto, key, { value: () => ({ success: true, data: 0 }), configurable: true, writable: true });
    return { tried, blob };`;
      const before = sha256(blobOf(snapshots));
      const attacked = await runSandbox(
        { name: 'attacker', source: probeTool('attacker', attack), input: { n: 1 }, limits: { ...limits, ...runAs } },
        { pool },
      );
      expect(attacked.status).toBe('passed');
      const { tried, blob } = attacked.output as { tried: Record<string, string>; blob: string };
      expect(blob).toBeDefined();
      for (const outcome of Object.values(tried)) expect(outcome).not.toBe('done');
      // The harm that did not happen: the file is the same bytes, and the next run's zod is the package's own.
      expect(sha256(blob)).toBe(before);
      await until(() => pool.ready === 1);
      const next = await runSandbox({ name: 'probe', source: probeTool('probe', ''), input: { n: 2 }, limits: { ...limits, ...runAs } }, { pool });
      expect(next).toMatchObject({ status: 'passed', output: { n: 2, blob, rejectsText: true } });
      await until(() => pool.ready === 1);
      expect((await runSandbox({ name: 'probe', source: probeTool('probe', ''), input: { n: 'x' }, limits: { ...limits, ...runAs } }, { pool })).status).toBe(
        'invalid',
      );
      expect(pool.servedFromSnapshot).toBe(3);
    } finally {
      await pool.close();
    }
  },
  120_000,
);

test('a directory others can write is never used: a blob planted there under the right name is not run', async () => {
  const dir = join(tempRoot, 'snapshots-c');
  const snapshots = new HarnessSnapshots(dir);
  const preload = new PreloadSet(['zod'], 4);
  const flags = harnessNodeFlags(resolveLimits(limits));
  // Made before Forge, writable by everyone (as a directory squatted in /tmp by another user would be), holding a file
  // where the blob goes: its name is computed from public inputs, so an attacker can compute it too.
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { mode: 0o777 });
  chmodSync(dir, 0o777);
  const planted = blobOf(snapshots);
  // A working snapshot, made with the runs' own flags, whose main function leaves a mark and then runs the harness.
  const marker = join(tempRoot, 'planted-snapshot-ran');
  const evil = join(tempRoot, 'evil-snapshot.cjs');
  writeFileSync(
    evil,
    `require('node:v8').startupSnapshot.setDeserializeMainFunction(() => {
      require('node:fs').writeFileSync(${JSON.stringify(marker)}, 'ran');
      process.argv.splice(1, 0, ${JSON.stringify(harnessPath())});
      require('node:module').runMain();
    });`,
  );
  execFileSync(process.execPath, ['--no-warnings', ...flags, '--snapshot-blob', planted, '--build-snapshot', evil]);
  // It works: a process started from it runs the planted code (then the harness, which finds no run and exits).
  spawnSync(process.execPath, [...flags, '--snapshot-blob', planted], { stdio: 'ignore', timeout: 5_000 });
  expect(existsSync(marker)).toBe(true);
  rmSync(marker);
  const plantedHash = sha256(planted);
  expect(snapshots.blobFor(flags, preload.snapshotFiles())).toBeUndefined();
  await snapshots.settled();
  expect(snapshots.lastFailure).toMatch(/not a directory only this user can write/);
  const pool = new SandboxPool(limits, 1, { preload, snapshots });
  try {
    await until(() => pool.ready === 1);
    const verdict = await runSandbox({ name: 'probe', source: probeTool('probe', ''), input: { n: 3 }, limits }, { pool });
    expect(verdict).toMatchObject({ status: 'passed', output: { n: 3, rejectsText: true } });
    expect((verdict.output as { blob: string | null }).blob).toBeNull();
    expect(pool.servedFromSnapshot).toBe(0);
    // The harm that did not happen: no process ran the planted code, and it is left as it was for the operator.
    expect(existsSync(marker)).toBe(false);
    expect(sha256(planted)).toBe(plantedHash);
  } finally {
    await pool.close();
  }
}, 120_000);

test('a blob that no longer loads is dropped after its first spare dies, and runs go on without it', async () => {
  const dir = join(tempRoot, 'snapshots-d');
  const snapshots = new HarnessSnapshots(dir);
  const pool = await snapshotPool(snapshots);
  try {
    await until(() => pool.ready === 1);
    const blob = blobOf(snapshots);
    // Damaged on disk after it was checked: the spare already waiting was started before, the next ones die at start.
    writeFileSync(blob, 'damaged');
    await runSandbox({ name: 'probe', source: probeTool('probe', ''), input: { n: 4 }, limits }, { pool });
    for (let i = 0; i < 3; i++) {
      await new Promise((r) => setTimeout(r, 500));
      const verdict = await runSandbox({ name: 'probe', source: probeTool('probe', ''), input: { n: 5 }, limits }, { pool });
      expect(verdict).toMatchObject({ status: 'passed', output: { n: 5, rejectsText: true } });
    }
    // The damaged file is gone, so the next build makes it anew.
    expect(() => statSync(blob)).toThrow();
  } finally {
    await pool.close();
  }
}, 120_000);

test('a run that finds no spare starts its own process from the snapshot, and from a plain one when the blob fails', async () => {
  const dir = join(tempRoot, 'snapshots-e');
  const snapshots = new HarnessSnapshots(dir);
  // No spares at all: every run starts its own process.
  const pool = await snapshotPool(snapshots, {}, 0);
  try {
    const first = await runSandbox({ name: 'probe', source: probeTool('probe', ''), input: { n: 6 }, limits }, { pool });
    const blob = blobOf(snapshots);
    expect(first).toMatchObject({ status: 'passed', output: { n: 6, blob, rejectsText: true } });
    writeFileSync(blob, 'damaged');
    // The tool never ran in the process that could not start: it gets a plain one, and its own verdict.
    const second = await runSandbox({ name: 'probe', source: probeTool('probe', ''), input: { n: 7 }, limits }, { pool });
    expect(second).toMatchObject({ status: 'passed', output: { n: 7, blob: null, rejectsText: true } });
    const failing = await runSandbox({ name: 'probe', source: probeTool('probe', 'throw new Error("its own failure");'), input: { n: 8 }, limits }, { pool });
    expect(failing).toMatchObject({ status: 'failed', error: expect.stringContaining('its own failure') });
  } finally {
    await pool.close();
  }
}, 120_000);

test('two builders of the same blob at once in one process both end with it, and neither records a failure', async () => {
  const dir = join(tempRoot, 'snapshots-f');
  const [a, b] = [new HarnessSnapshots(dir), new HarnessSnapshots(dir)];
  const preload = new PreloadSet(['zod'], 4);
  const flags = harnessNodeFlags(resolveLimits(limits));
  expect(a.blobFor(flags, preload.snapshotFiles())).toBeUndefined();
  expect(b.blobFor(flags, preload.snapshotFiles())).toBeUndefined();
  await Promise.all([a.settled(), b.settled()]);
  expect([a.lastFailure, b.lastFailure]).toEqual([undefined, undefined]);
  const blob = blobOf(a);
  expect(a.blobFor(flags, preload.snapshotFiles())).toBe(blob);
  expect(b.blobFor(flags, preload.snapshotFiles())).toBe(blob);
  // What both handed out starts a spare that answers, and no build's temp file is left behind.
  const pool = new SandboxPool(limits, 1, { preload, snapshots: b });
  try {
    await until(() => pool.ready === 1);
    const verdict = await runSandbox({ name: 'probe', source: probeTool('probe', ''), input: { n: 9 }, limits }, { pool });
    expect(verdict).toMatchObject({ status: 'passed', output: { n: 9, blob, rejectsText: true } });
  } finally {
    await pool.close();
  }
  expect(readdirSync(dir).filter((name) => name.endsWith('.tmp'))).toEqual([]);
}, 120_000);

test('a second install of Forge of the same user builds a blob of its own, and both keep starting spares from theirs', async () => {
  // The other install: this package's built files and harness at another path, its node_modules the same packages.
  const root = join(tempRoot, 'second-install');
  mkdirSync(join(root, 'src'), { recursive: true });
  cpSync(join(packageRoot(), 'package.json'), join(root, 'package.json'));
  cpSync(join(packageRoot(), 'src', 'sandbox'), join(root, 'src', 'sandbox'), { recursive: true, filter: (f) => !f.endsWith('.ts') || f.endsWith('.d.cts') });
  cpSync(join(packageRoot(), 'dist', 'src'), join(root, 'dist', 'src'), { recursive: true });
  symlinkSync(join(packageRoot(), 'node_modules'), join(root, 'node_modules'));
  chmodSync(tempRoot, 0o755);
  const load = async <T>(file: string) => (await import(join(root, 'dist', 'src', 'sandbox', file))) as T;
  const other = await load<typeof SandboxModule>('index.js');
  const otherSnapshots = await load<typeof SnapshotModule>('harness-snapshot.js');
  const otherPreload = await load<typeof PreloadModule>('preload.js');

  const dir = join(tempRoot, 'snapshots-g');
  const ours = new HarnessSnapshots(dir);
  const theirs = new otherSnapshots.HarnessSnapshots(dir);
  const ourPool = await snapshotPool(ours);
  const theirPreload = new otherPreload.PreloadSet(['zod'], 4);
  theirs.blobFor(otherSnapshots.harnessNodeFlags(resolveLimits(limits)), theirPreload.snapshotFiles());
  await theirs.settled();
  expect(theirs.lastFailure).toBeUndefined();
  const theirPool = new other.SandboxPool(limits, 1, { preload: theirPreload, snapshots: theirs });
  try {
    // Turn about, as two workers would: every run of each starts from its own blob, which stays in place.
    for (let i = 0; i < 3; i++) {
      for (const pool of [ourPool, theirPool]) {
        await until(() => pool.ready === 1);
        const run = pool === ourPool ? runSandbox : other.runSandbox;
        expect(await run({ name: 'probe', source: probeTool('probe', ''), input: { n: i }, limits }, { pool })).toMatchObject({ status: 'passed' });
      }
    }
    expect([ourPool.servedFromSnapshot, theirPool.servedFromSnapshot]).toEqual([3, 3]);
    expect(existsSync(blobOf(ours))).toBe(true);
    expect(theirs.pathFor(harnessNodeFlags(resolveLimits(limits)), new PreloadSet(['zod'], 4).snapshotFiles())).not.toBe(blobOf(ours));
  } finally {
    await ourPool.close();
    await theirPool.close();
  }
}, 120_000);
