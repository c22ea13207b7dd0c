import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { ToolStore } from '../../src/db';
import {
  materializeActiveTools,
  readActiveIndex,
  readManifest,
  ToolFileConflictError,
  versionPaths,
  writeActiveIndex,
  writeToolVersion,
  writeToolVersionFiles,
  ToolRegistry,
} from '../../src/registry';
import { publishToolChanges } from '../../src/registry/materialize';
import { greeterSource, scratchDatabase, scratchDir, storeVersion } from './helpers';

describe('materializeActiveTools', () => {
  let db: Awaited<ReturnType<typeof scratchDatabase>>;
  let store: ToolStore;
  let dir: string;

  beforeAll(async () => {
    db = await scratchDatabase();
    store = db.store;
  });
  afterAll(() => db.dispose());
  beforeEach(() => {
    // A fresh agent-tools directory per test: like a worker on a host that has never seen these tools.
    dir = scratchDir('forge-materialize-');
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('writes the files of every active version from the database, then active.json', async () => {
    const row = await storeVersion(store, 'mat_basic', greeterSource('mat_basic', 'hello'));
    await store.activate('mat_basic', row.version);
    const index = await materializeActiveTools(store, dir);

    expect(index.tools.mat_basic).toEqual({ version: row.version, contentHash: row.contentHash });
    expect(index.generation).toBeGreaterThan(0);
    expect(await readActiveIndex(dir)).toEqual(index);
    const paths = versionPaths(dir, 'mat_basic', row.version);
    expect(readFileSync(paths.source, 'utf8')).toBe(row.sourceTs);
    expect(readFileSync(paths.compiled, 'utf8')).toBe(row.compiledJs);
    expect(await readManifest(dir, 'mat_basic', row.version)).toMatchObject({ contentHash: row.contentHash, description: row.description });
  });

  it('does not rewrite active.json when nothing changed', async () => {
    const first = await materializeActiveTools(store, dir);
    const stamp = statSync(path.join(dir, 'active.json')).ino;
    const second = await materializeActiveTools(store, dir);
    expect(second).toEqual(first);
    expect(statSync(path.join(dir, 'active.json')).ino).toBe(stamp);
  });

  it('never lets active.json name a version whose files are not there yet', async () => {
    const violations: string[] = [];
    let watching = true;
    // Another process's registry, reading as fast as it can while versions are activated and materialised.
    const watcher = (async () => {
      while (watching) {
        const index = await readActiveIndex(dir).catch(() => undefined);
        for (const [name, entry] of Object.entries(index?.tools ?? {})) {
          const paths = versionPaths(dir, name, entry.version);
          for (const file of [paths.manifest, paths.compiled, paths.source]) {
            if (!existsSync(file)) violations.push(`${name} v${entry.version}: ${path.basename(file)} missing`);
          }
        }
        await new Promise((r) => setImmediate(r));
      }
    })();
    for (let i = 0; i < 8; i++) {
      const row = await storeVersion(store, 'mat_order', greeterSource('mat_order', `v${i}`));
      await store.activate('mat_order', row.version);
      await materializeActiveTools(store, dir);
    }
    watching = false;
    await watcher;
    expect(violations).toEqual([]);
  });

  it('never leaves active.json naming a file that a deletion racing it removed (rm -rf in the middle, in a loop)', async () => {
    for (const name of ['mat_race_a', 'mat_race_b', 'mat_race_c']) {
      const row = await storeVersion(store, name, greeterSource(name, 'race'));
      await store.activate(name, row.version);
    }
    // Once materialised, every version is "verified" in this process: the next calls look at manifests only.
    await materializeActiveTools(store, dir);
    const violations: string[] = [];
    for (let round = 0; round < 60; round++) {
      const publishing = materializeActiveTools(store, dir).catch(() => undefined);
      // Let it get a different distance each round (reads of manifests in flight on libuv's threads, writes under
      // way), then delete the whole directory at once, as the chaos test's rm -rf does: synchronously, so whatever
      // the materialisation saw a moment ago is gone when its next step runs.
      for (let tick = 0; tick < round % 15; tick++) await new Promise((r) => setImmediate(r));
      rmSync(dir, { recursive: true, force: true });
      await publishing;
      const index = await readActiveIndex(dir).catch(() => undefined);
      for (const [name, entry] of Object.entries(index?.tools ?? {})) {
        const paths = versionPaths(dir, name, entry.version);
        for (const file of [paths.source, paths.compiled, paths.manifest]) {
          if (!existsSync(file)) violations.push(`round ${round}: active.json names ${name} v${entry.version} but ${path.basename(file)} is missing`);
        }
      }
    }
    expect(violations).toEqual([]);
  });

  it('serialises concurrent calls, and the generation on disk never goes down', async () => {
    const seen: number[] = [];
    let watching = true;
    const watcher = (async () => {
      while (watching) {
        const index = await readActiveIndex(dir).catch(() => undefined);
        if (index) seen.push(index.generation);
        await new Promise((r) => setImmediate(r));
      }
    })();
    const tools = ['mat_conc_a', 'mat_conc_b', 'mat_conc_c'];
    const work: Promise<unknown>[] = [];
    for (let round = 0; round < 4; round++) {
      for (const name of tools) {
        work.push(
          (async () => {
            const row = await storeVersion(store, name, greeterSource(name, `r${round}`));
            await store.activate(name, row.version);
          })(),
        );
        work.push(materializeActiveTools(store, dir), materializeActiveTools(store, dir));
      }
    }
    const results = await Promise.all(work);
    // Once every activation has committed, one more call settles the directory on the database's state.
    const final = await materializeActiveTools(store, dir);
    watching = false;
    await watcher;

    for (let i = 1; i < seen.length; i++) expect(seen[i]).toBeGreaterThanOrEqual(seen[i - 1]);
    const returned = results.filter((r): r is { generation: number } => typeof r === 'object' && r !== null && 'generation' in r);
    // Calls complete in call order (the mutex), so their generations are non-decreasing too.
    for (let i = 1; i < returned.length; i++) expect(returned[i].generation).toBeGreaterThanOrEqual(returned[i - 1].generation);
    expect(final.generation).toBeGreaterThanOrEqual(returned[returned.length - 1].generation);
    for (const name of tools) {
      const active = await store.getActive(name);
      expect(final.tools[name]?.version).toBe(active?.version);
    }
    expect(await readActiveIndex(dir)).toEqual(final);
  });

  it('moves the generation up even when no newer event id exists', async () => {
    const before = await materializeActiveTools(store, dir);
    // A pointer file from an older round, hand-edited to lose a tool, with the newest generation: the database still
    // says the tool is active, so the next call must rewrite it, and with a higher generation.
    const name = Object.keys(before.tools)[0];
    const tampered = { ...before, tools: { ...before.tools } };
    delete tampered.tools[name];
    await writeActiveIndex(dir, tampered);
    const after = await materializeActiveTools(store, dir);
    expect(after.generation).toBeGreaterThan(before.generation);
    expect(after.tools[name]).toEqual(before.tools[name]);
  });

  it('removes the directory of a deleted tool, and keeps that of a deactivated one', async () => {
    const gone = await storeVersion(store, 'mat_gone', greeterSource('mat_gone', 'bye'));
    const kept = await storeVersion(store, 'mat_kept', greeterSource('mat_kept', 'still'));
    await store.activate('mat_gone', gone.version);
    await store.activate('mat_kept', kept.version);
    await materializeActiveTools(store, dir);
    expect(existsSync(path.join(dir, 'mat_gone'))).toBe(true);

    await store.removeTool('mat_gone');
    await store.deactivate('mat_kept');
    const index = await materializeActiveTools(store, dir);
    expect(index.tools.mat_gone).toBeUndefined();
    expect(index.tools.mat_kept).toBeUndefined();
    expect(existsSync(path.join(dir, 'mat_gone'))).toBe(false);
    expect(existsSync(versionPaths(dir, 'mat_kept', kept.version).manifest)).toBe(true);
  });

  it('writes one version ahead of activation, idempotently (the deploy activity retried)', async () => {
    const row = await storeVersion(store, 'mat_ahead', greeterSource('mat_ahead', 'early'));
    await expect(writeToolVersion(dir, row, { inputJsonSchema: { type: 'object' } })).resolves.toMatchObject({ created: true });
    await expect(writeToolVersion(dir, row, { inputJsonSchema: { type: 'object' } })).resolves.toMatchObject({ created: false });
    // Not active yet: no registry may see it.
    expect((await materializeActiveTools(store, dir)).tools.mat_ahead).toBeUndefined();
    expect((await readManifest(dir, 'mat_ahead', row.version))?.inputJsonSchema).toEqual({ type: 'object' });
  });

  it("never lets a registry run module bytes swapped in between the commit's write and the publish", async () => {
    // The deployment writes a version's files from its stored row, then publishes the pointer. Whatever replaced the
    // module on disk in between (same manifest, other code) must not become what a registry runs.
    const first = await storeVersion(store, 'mat_swap', greeterSource('mat_swap', 'one'));
    await store.activate('mat_swap', first.version);
    await materializeActiveTools(store, dir);
    const row = await storeVersion(store, 'mat_swap', greeterSource('mat_swap', 'two'));
    await writeToolVersion(dir, row);
    await store.activate('mat_swap', row.version);
    // Same length, written in place, and its modification time put back to the nanosecond: only the change time tells.
    const planted = row.compiledJs.replace('"two "', '"TWO "');
    expect(planted).not.toBe(row.compiledJs);
    const compiledFile = versionPaths(dir, 'mat_swap', row.version).compiled;
    const before = statSync(compiledFile, { bigint: true });
    const reference = `${compiledFile}.times`;
    execFileSync('cp', ['--preserve=timestamps', compiledFile, reference]);
    writeFileSync(compiledFile, planted);
    execFileSync('touch', ['-r', reference, compiledFile]);
    rmSync(reference);
    expect(statSync(compiledFile, { bigint: true })).toMatchObject({ ino: before.ino, size: before.size, mtimeNs: before.mtimeNs });

    const published = await publishToolChanges(store, dir, ['mat_swap']).then(
      () => 'published',
      (e: unknown) => e,
    );
    const ran: string[] = [];
    const registry = await ToolRegistry.open({
      dir,
      fsWatch: false,
      pollIntervalMs: 60_000,
      invoker: {
        invoke: ({ compiledJs }) => {
          ran.push(compiledJs);
          return Promise.resolve({ status: 'passed', output: null, durationMs: 0, logs: [] } as never);
        },
      },
    });
    try {
      await registry.invoke('mat_swap', { who: 'x' });
    } finally {
      await registry.close();
    }
    // Either the publish refused the directory (and the pointer stayed on the old version), or what runs is the stored row.
    expect(ran).toHaveLength(1);
    expect(ran[0]).not.toBe(planted);
    if (published === 'published') expect(ran[0]).toBe(row.compiledJs);
    else expect(published).toBeInstanceOf(ToolFileConflictError);
  });

  /** The materialisation of a process that has never seen `dir`: a worker's start. */
  function freshProcessMaterialize(): typeof materializeActiveTools {
    let fresh!: typeof materializeActiveTools;
    jest.isolateModules(() => {
      fresh = (jest.requireActual('../../src/registry/materialize') as { materializeActiveTools: typeof materializeActiveTools }).materializeActiveTools;
    });
    return fresh;
  }

  it("a worker's start checks the files already there by their hashes, reading no stored row", async () => {
    for (let i = 0; i < 5; i++) {
      const row = await storeVersion(store, `mat_start_${i}`, greeterSource(`mat_start_${i}`, `s${i}`));
      await store.activate(`mat_start_${i}`, row.version);
    }
    const first = await materializeActiveTools(store, dir);
    const getVersion = jest.spyOn(store, 'getVersion');
    try {
      const again = await freshProcessMaterialize()(store, dir);
      expect(again.tools).toEqual(first.tools);
      expect(getVersion).not.toHaveBeenCalled();
    } finally {
      getVersion.mockRestore();
    }
  });

  it("a worker's start refuses module bytes another database left under the same version and content hash", async () => {
    const row = await storeVersion(store, 'mat_left', greeterSource('mat_left', 'ours'));
    await store.activate('mat_left', row.version);
    // Left behind by another database: the same name, version, content hash and source, another module.
    const planted = row.compiledJs.replace('"ours "', '"OURS "');
    expect(planted).not.toBe(row.compiledJs);
    await writeToolVersionFiles(dir, {
      manifest: { name: 'mat_left', version: row.version, contentHash: row.contentHash, description: '', createdAt: '', workflowId: null },
      sourceTs: row.sourceTs,
      compiledJs: planted,
    });
    // (The fresh module's own error class: matched by name.)
    await expect(freshProcessMaterialize()(store, dir)).rejects.toMatchObject({ name: 'ToolFileConflictError', tool: 'mat_left' });
    expect((await readActiveIndex(dir))?.tools.mat_left).toBeUndefined();
    expect(readFileSync(versionPaths(dir, 'mat_left', row.version).compiled, 'utf8')).toBe(planted);
  });

  it('refuses a directory whose version files hold other code than the database (immutable versions)', async () => {
    const row = await storeVersion(store, 'mat_clash', greeterSource('mat_clash', 'db'));
    await store.activate('mat_clash', row.version);
    // Left behind by another database whose v<N> meant something else.
    await writeToolVersionFiles(dir, {
      manifest: { name: 'mat_clash', version: row.version, contentHash: 'other', description: '', createdAt: '', workflowId: null },
      sourceTs: '// other',
      compiledJs: '// other',
    });
    await expect(materializeActiveTools(store, dir)).rejects.toBeInstanceOf(ToolFileConflictError);
    expect((await readActiveIndex(dir))?.tools.mat_clash).toBeUndefined();
  });
});
