import { existsSync, rmSync, unlinkSync } from 'node:fs';
import path from 'node:path';
import type { ToolStore } from '../../src/db';
import { materializeActiveTools, readActiveIndex, rebuildWhenLost, versionPaths, type ActiveIndex } from '../../src/registry';
import { greeterSource, scratchDatabase, scratchDir, storeVersion } from './helpers';

describe('rebuildWhenLost', () => {
  let db: Awaited<ReturnType<typeof scratchDatabase>>;
  let store: ToolStore;
  let dir: string;
  let stop: (() => Promise<void>) | undefined;

  beforeAll(async () => {
    db = await scratchDatabase();
    store = db.store;
    for (const name of ['lost_a', 'lost_b']) {
      const row = await storeVersion(store, name, greeterSource(name, 'hello'));
      await store.activate(name, row.version);
    }
  });
  afterAll(() => db.dispose());
  beforeEach(() => {
    dir = scratchDir('forge-rebuild-');
  });
  afterEach(async () => {
    await stop?.();
    stop = undefined;
    rmSync(dir, { recursive: true, force: true });
  });

  const until = async (check: () => boolean, ms: number) => {
    const deadline = Date.now() + ms;
    while (!check()) {
      if (Date.now() > deadline) throw new Error(`not within ${ms} ms`);
      await new Promise((r) => setTimeout(r, 20));
    }
  };

  it('rebuilds a deleted agent-tools directory from the database within its interval, every active version whole', async () => {
    const before = await materializeActiveTools(store, dir);
    const rebuilt: ActiveIndex[] = [];
    ({ stop } = rebuildWhenLost(dir, () => materializeActiveTools(store, dir), { intervalMs: 100, onRebuilt: (i) => rebuilt.push(i) }));
    await new Promise((r) => setTimeout(r, 350));
    expect(rebuilt).toEqual([]); // nothing lost, nothing done

    rmSync(dir, { recursive: true, force: true });
    const lostAt = Date.now();
    await until(() => existsSync(path.join(dir, 'active.json')), 2_000);
    expect(Date.now() - lostAt).toBeLessThan(1_000);
    await until(() => rebuilt.length === 1, 1_000);
    const index = await readActiveIndex(dir);
    expect(index?.tools).toEqual(before.tools);
    for (const [name, entry] of Object.entries(index!.tools)) {
      for (const file of Object.values(versionPaths(dir, name, entry.version))) expect(existsSync(file)).toBe(true);
    }
  });

  it('rebuilds after active.json alone was deleted, retries a rebuild that failed, and stops when told', async () => {
    await materializeActiveTools(store, dir);
    const errors: string[] = [];
    let failures = 1;
    ({ stop } = rebuildWhenLost(
      dir,
      async () => {
        if (failures-- > 0) throw new Error('database unreachable');
        return materializeActiveTools(store, dir);
      },
      { intervalMs: 50, onError: (e) => errors.push(e.message) },
    ));
    unlinkSync(path.join(dir, 'active.json'));
    await until(() => existsSync(path.join(dir, 'active.json')), 2_000);
    expect(errors).toEqual(['database unreachable']);

    await stop();
    stop = undefined;
    unlinkSync(path.join(dir, 'active.json'));
    await new Promise((r) => setTimeout(r, 200));
    expect(existsSync(path.join(dir, 'active.json'))).toBe(false);
  });
});
