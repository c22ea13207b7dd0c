import fsp from 'node:fs/promises';
import { appendFileSync, readFileSync, rmSync, statSync, unlinkSync } from 'node:fs';
import path from 'node:path';
import type { ToolStore } from '../../src/db';
import { compileTool } from '../../src/sandbox';
import { materializeActiveTools, readActiveIndex, ToolRegistry } from '../../src/registry';
import { publishToolChanges } from '../../src/registry/materialize';
import { greeterSource, scratchDatabase, scratchDir } from './helpers';
import * as toolStoreModule from '../../src/db/tool-store';
import { databaseSource } from '../../src/registry/database-source';

/**
 * Issue 28: what one deployment's publish and one registry reload read and write must not grow with the number of
 * active tools. Counted, not timed: the files opened or read and the bytes written to agent-tools/ for one change,
 * with N and with 10 N tools.
 */
describe('publishing one change to agent-tools/', () => {
  let db: Awaited<ReturnType<typeof scratchDatabase>>;
  let store: ToolStore;
  let compiledJs: string;
  let seeded = 0;

  beforeAll(async () => {
    db = await scratchDatabase();
    store = db.store;
    const compiled = await compileTool(greeterSource('t', 'hello'), 't');
    if (!compiled.ok) throw new Error('fixture does not compile');
    compiledJs = compiled.code;
  });
  afterAll(() => db.dispose());

  /** Stores and activates `count` more tools (one shared module: its bytes do not matter here). */
  async function seed(count: number): Promise<void> {
    for (let i = 0; i < count; i++, seeded++) {
      const name = `many_${String(seeded).padStart(5, '0')}`;
      const { row } = await store.insertVersion({
        name,
        contentHash: `${seeded.toString(16).padStart(8, '0')}${'a'.repeat(56)}`,
        sourceTs: greeterSource(name, 'hello'),
        compiledJs,
        testInput: { who: 'x' },
        description: `Tool ${seeded}.`,
        verdict: { status: 'passed' },
      });
      await store.activate(name, row.version);
    }
  }

  let variant = 0;
  /** A new version of `name`, stored and made active, as a deployment's commit does. */
  async function deployNewVersion(name: string): Promise<number> {
    const { row } = await store.insertVersion({
      name,
      contentHash: `${(++variant).toString(16).padStart(8, '0')}${'b'.repeat(56)}`,
      sourceTs: greeterSource(name, `v${variant}`),
      compiledJs,
      testInput: { who: 'x' },
      description: `Deployed ${variant}.`,
      verdict: { status: 'passed' },
    });
    await store.activate(name, row.version);
    return row.version;
  }

  /** Counts what the file system is asked for while `fn` runs: files opened or read whole, and bytes written. */
  async function counting(dir: string, fn: () => Promise<unknown>): Promise<{ opened: string[]; writtenBytes: number }> {
    const opened: string[] = [];
    const rel = (p: unknown) => path.relative(dir, String(p));
    const [readFile, open] = [fsp.readFile.bind(fsp), fsp.open.bind(fsp)];
    const spies = [
      jest.spyOn(fsp, 'readFile').mockImplementation(((p: Parameters<typeof fsp.readFile>[0], ...rest: unknown[]) => {
        opened.push(rel(p));
        return (readFile as (...a: unknown[]) => unknown)(p, ...rest);
      }) as typeof fsp.readFile),
      jest.spyOn(fsp, 'open').mockImplementation(((p: Parameters<typeof fsp.open>[0], ...rest: unknown[]) => {
        opened.push(rel(p));
        return (open as (...a: unknown[]) => unknown)(p, ...rest);
      }) as typeof fsp.open),
    ];
    const sizes = () => ['active.json', 'active.log'].map((f) => ({ f, s: statSync(path.join(dir, f), { throwIfNoEntry: false }) }));
    const before = sizes();
    try {
      await fn();
    } finally {
      for (const spy of spies) spy.mockRestore();
    }
    const after = sizes();
    // Bytes written to the index files: a replaced file counts whole, a grown one by what it grew.
    let writtenBytes = 0;
    after.forEach(({ s }, i) => {
      const b = before[i].s;
      if (!s) return;
      writtenBytes += b && b.ino === s.ino ? Math.max(0, s.size - b.size) : s.size;
    });
    return { opened, writtenBytes };
  }

  /** Publishes one deployment of `deployed` and reloads a registry, with `total` tools active; returns the counts. */
  async function measureAt(total: number) {
    await seed(total - seeded);
    const dir = scratchDir('forge-publish-changes-');
    try {
      await materializeActiveTools(store, dir);
      const registry = await ToolRegistry.open({
        dir,
        fsWatch: false,
        pollIntervalMs: 60_000,
        invoker: { invoke: () => Promise.reject(new Error('not called')) },
      });
      try {
        expect(registry.list()).toHaveLength(total);
        const results = [];
        for (let i = 0; i < 3; i++) {
          const version = await deployNewVersion('many_00000');
          const publish = await counting(dir, () => publishToolChanges(store, dir, ['many_00000']));
          // The registry's reload, as its watcher would start it.
          const reload = await counting(dir, async () => {
            await (registry as unknown as { reloadOnce(): Promise<void> }).reloadOnce();
          });
          expect(registry.get('many_00000')?.version).toBe(version);
          expect(registry.list()).toHaveLength(total);
          results.push({ publish, reload });
        }
        const index = await readActiveIndex(dir);
        expect(Object.keys(index?.tools ?? {})).toHaveLength(total);
        return results;
      } finally {
        await registry.close();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }

  // First, while few tools are active: the fold comes once the log passes 64 KiB (~450 lines) rather than active.json.
  it('folds the log into active.json once it outgrows it, and every reader agrees before and after', async () => {
    await seed(5);
    const dir = scratchDir('forge-publish-fold-');
    try {
      await materializeActiveTools(store, dir);
      const inode = () => statSync(path.join(dir, 'active.json')).ino;
      const first = inode();
      let folds = 0;
      for (let i = 0; i < 1_000 && folds === 0; i++) {
        await deployNewVersion('many_00001');
        const r = await publishToolChanges(store, dir, ['many_00001']);
        if (r.folded) folds++;
      }
      expect(folds).toBe(1);
      expect(inode()).not.toBe(first);
      expect(statSync(path.join(dir, 'active.log')).size).toBe(0);
      const pointer = await store.getActive('many_00001');
      expect((await readActiveIndex(dir))?.tools.many_00001?.version).toBe(pointer?.version);
      // A fresh materialisation from the database finds nothing to change.
      const full = await materializeActiveTools(store, dir);
      expect(full.tools.many_00001?.version).toBe(pointer?.version);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 180_000);

  it('reads and writes the same at N and at 10 N tools: one line of the log, one manifest, never every tool', async () => {
    const small = await measureAt(50);
    const large = await measureAt(500);
    for (const [i, l] of large.entries()) {
      const s = small[i];
      // Same files touched, whatever the number of tools (names differ only by the version number).
      expect(l.publish.opened.length).toBe(s.publish.opened.length);
      expect(l.reload.opened.length).toBe(s.reload.opened.length);
      // One line appended; active.json is not rewritten.
      expect(l.publish.writtenBytes).toBeLessThan(400);
      expect(s.publish.writtenBytes).toBeLessThan(400);
      expect(l.publish.opened.filter((f) => /^many_\d+\/v\d+\.json$/.test(f)).every((f) => f.startsWith('many_00000/'))).toBe(true);
      // The registry reads the log and the one new manifest, not active.json's 500 entries nor other manifests.
      expect(l.reload.opened.filter((f) => f.endsWith('.json') && f !== 'active.json').every((f) => f.startsWith('many_00000/'))).toBe(true);
      expect(l.reload.opened.length).toBeLessThanOrEqual(4);
      expect(l.publish.opened).toContain('active.log');
      expect(l.reload.opened.some((f) => f.startsWith('many_00000/v'))).toBe(true);
    }
  }, 180_000);

  it('a registry in database mode reloads the tool a NOTIFY names, without listing every active tool', async () => {
    await seed(Math.max(0, 500 - seeded));
    const calls = { listActive: 0, getActive: 0 };
    const real = toolStoreModule.createToolStore;
    const spy = jest.spyOn(toolStoreModule, 'createToolStore').mockImplementation((database) => {
      const inner = real(database);
      return {
        ...inner,
        listActive: () => (calls.listActive++, inner.listActive()),
        getActive: (name: string) => (calls.getActive++, inner.getActive(name)),
      };
    });
    const registry = await ToolRegistry.open({ source: databaseSource(db.database), invoker: { invoke: () => Promise.reject(new Error('not called')) } });
    spy.mockRestore();
    try {
      expect(registry.list().length).toBeGreaterThanOrEqual(500);
      const changes: unknown[] = [];
      registry.onChange((c) => changes.push(c));
      const before = { ...calls };
      const version = await deployNewVersion('many_00006');
      await registry.waitFor('many_00006', version, 10_000);
      expect(calls.listActive).toBe(before.listActive);
      // One pointer read per notification (storing the version and activating it may each notify), not 500.
      expect(calls.getActive - before.getActive).toBeGreaterThanOrEqual(1);
      expect(calls.getActive - before.getActive).toBeLessThanOrEqual(2);
      expect(changes).toEqual([expect.objectContaining({ added: [], updated: ['many_00006'], removed: [] })]);
    } finally {
      await registry.close();
    }
  }, 120_000);

  it('skips a torn last line a killed writer left, and the next writer cuts it off before appending', async () => {
    const dir = scratchDir('forge-publish-torn-');
    try {
      await materializeActiveTools(store, dir);
      const v1 = await deployNewVersion('many_00002');
      await publishToolChanges(store, dir, ['many_00002']);
      // Killed half-way through its write: a line without its end.
      appendFileSync(path.join(dir, 'active.log'), '{"base":1,"generation":99999999,"name":"many_00');
      expect((await readActiveIndex(dir))?.tools.many_00002?.version).toBe(v1);
      const v2 = await deployNewVersion('many_00002');
      await publishToolChanges(store, dir, ['many_00002']);
      const log = readFileSync(path.join(dir, 'active.log'), 'utf8');
      expect(log.endsWith('\n')).toBe(true);
      for (const line of log.trim().split('\n')) expect(() => JSON.parse(line) as unknown).not.toThrow();
      expect((await readActiveIndex(dir))?.tools.many_00002?.version).toBe(v2);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);

  it('materialises from scratch when the log it followed was removed, so no pointer stays behind', async () => {
    const dir = scratchDir('forge-publish-lost-');
    try {
      await materializeActiveTools(store, dir);
      const v1 = await deployNewVersion('many_00003');
      await publishToolChanges(store, dir, ['many_00003']);
      unlinkSync(path.join(dir, 'active.log'));
      // The pointer of many_00003 is back at its snapshot's on disk now; a change of another tool puts it right.
      await deployNewVersion('many_00004');
      const r = await publishToolChanges(store, dir, ['many_00004']);
      expect(r.full).toBe(true);
      expect((await readActiveIndex(dir))?.tools.many_00003?.version).toBe(v1);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);

  it('removes a deleted tool from the pointers and its directory from disk', async () => {
    const dir = scratchDir('forge-publish-removed-');
    try {
      await materializeActiveTools(store, dir);
      await store.removeTool('many_00005', { workflowId: 'test' });
      await publishToolChanges(store, dir, ['many_00005']);
      expect((await readActiveIndex(dir))?.tools.many_00005).toBeUndefined();
      expect(statSync(path.join(dir, 'many_00005'), { throwIfNoEntry: false })).toBeUndefined();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);
});
