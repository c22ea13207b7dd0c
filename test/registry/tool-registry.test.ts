import { spawn } from 'node:child_process';
import { rmSync } from 'node:fs';
import path from 'node:path';
import { createInterface } from 'node:readline';
import type { ToolStore } from '../../src/db';
import {
  materializeActiveTools,
  readActiveIndex,
  RegistryLoadError,
  ToolRegistry,
  writeActiveIndex,
  writeFileAtomic,
  type RegistryChange,
} from '../../src/registry';
import { processesMarkedWith } from '../helpers/processes';
import { greeterSource, scratchDatabase, scratchDir, storeVersion } from './helpers';
import { databaseSource } from '../../src/registry/database-source';

const spinnerSource = `import { z } from 'zod';
export default {
  name: 'spinner',
  description: 'Blocks its event loop forever.',
  inputSchema: z.object({}),
  async execute() { for (;;) {} },
};
`;

describe('ToolRegistry', () => {
  let db: Awaited<ReturnType<typeof scratchDatabase>>;
  let store: ToolStore;
  let dir: string;
  const registries: ToolRegistry[] = [];

  /** Persists `source` as the next version of `name`, activates it and materialises the directory. */
  async function deploy(name: string, tag: string, source = greeterSource(name, tag)): Promise<number> {
    const row = await storeVersion(store, name, source);
    await store.activate(name, row.version);
    await materializeActiveTools(store, dir);
    return row.version;
  }

  async function open(options: Parameters<typeof ToolRegistry.open>[0]): Promise<ToolRegistry> {
    const registry = await ToolRegistry.open(options);
    registries.push(registry);
    return registry;
  }

  beforeAll(async () => {
    db = await scratchDatabase();
    store = db.store;
    dir = scratchDir('forge-registry-dir-');
  });
  afterEach(async () => {
    await Promise.all(registries.splice(0).map((r) => r.close()));
  });
  afterAll(async () => {
    await db.dispose();
    rmSync(dir, { recursive: true, force: true });
  });

  describe('directory mode', () => {
    it('starts empty before anything was deployed', async () => {
      const registry = await open({ dir: path.join(dir, 'not-yet') });
      expect(registry.list()).toEqual([]);
      const result = await registry.invoke('greeter', { who: 'x' });
      expect(result).toMatchObject({ ok: false, status: 'not_found' });
    });

    it('loads the active versions and invokes them in the sandbox', async () => {
      const v1 = await deploy('greeter', 'hello');
      const registry = await open({ dir });
      expect(registry.get('greeter')).toMatchObject({ name: 'greeter', version: v1, description: 'Greets (greeter).' });
      expect(registry.list().map((t) => t.name)).toEqual(['greeter']);

      const result = await registry.invoke('greeter', { who: 'world' });
      expect(result).toMatchObject({ ok: true, name: 'greeter', version: v1, output: { greeting: 'hello world' } });
    });

    it('with spares, calls take processes started ahead; close() leaves none behind', async () => {
      const v1 = await deploy('greeter', 'hello');
      const marker = `forge-registry-spares-${process.pid}-${Date.now()}`;
      process.env.FORGE_TEST_REGISTRY_MARKER = marker;
      try {
        const registry = await ToolRegistry.open({ dir, spares: 2, limits: { envPassthrough: ['FORGE_TEST_REGISTRY_MARKER'] } });
        const deadline = Date.now() + 10_000;
        // Each spare is a launcher chain (setpriv/unshare, sh, node) carrying the marker in its environment.
        while (processesMarkedWith(marker).filter((p) => p.cmdline.includes('harness.cjs')).length < 2 && Date.now() < deadline) {
          await new Promise((r) => setTimeout(r, 20));
        }
        expect(processesMarkedWith(marker).filter((p) => p.cmdline.includes('harness.cjs')).length).toBeGreaterThanOrEqual(2);
        const results = await Promise.all(['a', 'b', 'c'].map((who) => registry.invoke('greeter', { who })));
        expect(results.map((r) => (r.ok ? r.output : r))).toEqual([{ greeting: 'hello a' }, { greeting: 'hello b' }, { greeting: 'hello c' }]);
        expect(results.every((r) => r.version === v1)).toBe(true);
        await registry.close();
        expect(processesMarkedWith(marker)).toEqual([]);
      } finally {
        delete process.env.FORGE_TEST_REGISTRY_MARKER;
      }
    });

    it('validates the input with the tool schema and reports unknown tools with what is available', async () => {
      const registry = await open({ dir });
      const bad = await registry.invoke('greeter', { who: 42 });
      expect(bad).toMatchObject({ ok: false, status: 'invalid', name: 'greeter' });
      if (!bad.ok) expect(bad.error).toMatch(/who/);

      const unknown = await registry.invoke('no_such_tool', {});
      expect(unknown).toMatchObject({ ok: false, status: 'not_found' });
      if (!unknown.ok) expect(unknown.error).toMatch(/available: .*greeter/);
    });

    it('bounds a tool that blocks its event loop, while the agent keeps running', async () => {
      await deploy('spinner', '', spinnerSource);
      const registry = await open({ dir });
      await registry.waitFor('spinner', (t) => t !== undefined, 5_000);
      let ticks = 0;
      const ticker = setInterval(() => ticks++, 20);
      const result = await registry.invoke('spinner', {}, { timeoutMs: 600 });
      clearInterval(ticker);
      expect(result).toMatchObject({ ok: false, status: 'timeout', name: 'spinner' });
      // The agent's own loop ran all along (~30 ticks in 600 ms; allow a slow machine plenty of slack).
      expect(ticks).toBeGreaterThan(10);
    });

    it('hot-reloads when active.json changes: new version, onChange, then removal', async () => {
      const registry = await open({ dir });
      const changes: RegistryChange[] = [];
      registry.onChange((c) => changes.push(c));
      const before = registry.get('greeter')!.version;

      const v2 = await deploy('greeter', 'howdy');
      expect(v2).toBeGreaterThan(before);
      await registry.waitFor('greeter', v2, 5_000);
      expect(await registry.invoke('greeter', { who: 'again' })).toMatchObject({ ok: true, version: v2, output: { greeting: 'howdy again' } });
      expect(changes.some((c) => c.updated.includes('greeter'))).toBe(true);

      await store.deactivate('spinner');
      await materializeActiveTools(store, dir);
      await registry.waitFor('spinner', (t) => t === undefined, 5_000);
      expect(registry.list().map((t) => t.name)).toEqual(['greeter']);
    });

    it('hot-reloads through the poll alone when fs.watch is off', async () => {
      const registry = await open({ dir, fsWatch: false, pollIntervalMs: 100 });
      const v = await deploy('greeter', 'polled');
      await registry.waitFor('greeter', v, 5_000);
      expect(await registry.invoke('greeter', { who: 'poll' })).toMatchObject({ ok: true, output: { greeting: 'polled poll' } });
    });

    it('keeps the loaded tools when a reload fails, and recovers on the next good index', async () => {
      const errors: unknown[] = [];
      const registry = await open({ dir, onReloadError: (e) => errors.push(e) });
      const good = (await readActiveIndex(dir))!;
      const loaded = registry.get('greeter');

      // A pointer to a version that has no files: the reload must fail as a whole, not half-apply.
      await writeActiveIndex(dir, {
        generation: good.generation + 1,
        updatedAt: new Date().toISOString(),
        tools: { ...good.tools, ghost: { version: 1, contentHash: 'nope' } },
      });
      await waitUntil(() => errors.length > 0, 5_000);
      expect(registry.get('greeter')).toEqual(loaded);
      expect(registry.get('ghost')).toBeUndefined();

      await writeActiveIndex(dir, { ...good, generation: good.generation + 2, updatedAt: new Date().toISOString() });
      await waitUntil(() => registry.generation === good.generation + 2, 5_000);
      expect(registry.get('greeter')).toEqual(loaded);
    });

    it('fails to open on an unreadable active.json', async () => {
      const broken = scratchDir('forge-registry-broken-');
      await writeFileAtomic(path.join(broken, 'active.json'), '{ not json');
      await expect(ToolRegistry.open({ dir: broken })).rejects.toBeInstanceOf(RegistryLoadError);
      rmSync(broken, { recursive: true, force: true });
    });

    it("lets a second process's registry pick up a new version without a restart", async () => {
      const child = spawn(path.resolve('node_modules/.bin/tsx'), [path.join(__dirname, 'registry-child.ts'), dir, 'greeter'], {
        stdio: ['pipe', 'pipe', 'pipe'],
      });
      let stderr = '';
      child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
      const lines: Array<{ version: number | null; result?: { ok: boolean; output?: unknown } }> = [];
      createInterface({ input: child.stdout }).on('line', (line) => lines.push(JSON.parse(line)));
      try {
        const current = (await store.getActive('greeter'))!.version;
        await waitUntil(
          () => lines.length > 0,
          20_000,
          () => `child said nothing; stderr: ${stderr}`,
        );
        expect(lines[0]).toMatchObject({ version: current, result: { ok: true } });

        const next = await deploy('greeter', 'bonjour');
        await waitUntil(
          () => lines.some((l) => l.version === next),
          10_000,
          () => `child saw ${JSON.stringify(lines)}; stderr: ${stderr}`,
        );
        expect(lines.find((l) => l.version === next)?.result).toMatchObject({ ok: true, output: { greeting: 'bonjour child' } });
      } finally {
        child.stdin.end();
        await new Promise<void>((resolve) => {
          const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
          child.once('exit', () => {
            clearTimeout(timer);
            resolve();
          });
        });
      }
    });
  });

  describe('database mode', () => {
    it('loads from the store and reloads on NOTIFY', async () => {
      const registry = await open({ source: databaseSource(db.database) });
      const current = (await store.getActive('greeter'))!.version;
      expect(registry.get('greeter')?.version).toBe(current);
      expect(await registry.invoke('greeter', { who: 'db' })).toMatchObject({ ok: true, version: current });

      // Activation alone (no files, no materialisation): the notification is what the registry hears.
      const row = await storeVersion(store, 'greeter', greeterSource('greeter', 'hola'));
      await store.activate('greeter', row.version);
      await registry.waitFor('greeter', row.version, 5_000);
      expect(await registry.invoke('greeter', { who: 'db' })).toMatchObject({ ok: true, version: row.version, output: { greeting: 'hola db' } });

      // Rollback is just another activation.
      await store.activate('greeter', current);
      await registry.waitFor('greeter', current, 5_000);

      await store.removeTool('greeter');
      await registry.waitFor('greeter', (t) => t === undefined, 5_000);
    });
  });
});

async function waitUntil(condition: () => boolean, timeoutMs: number, describe?: () => string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms${describe ? `: ${describe()}` : ''}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}
