import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { sql } from 'drizzle-orm';
import { DatabaseOpenError, ToolVersionNotFoundError } from '../../src/db/errors';
import { migrationsFolder } from '../../src/db/migrate';
import { openPostgres } from '../../src/db/postgres';
import { createToolActivities, createToolInnerSteps, type ToolActivityDeps } from '../../src/activities/tool-activities';
import { toolContentHash } from '../../src/contract/hashes';
import { createToolStore, type NewToolVersion, type ToolStore } from '../../src/db/tool-store';
import { TOOLS_CHANNEL } from '../../src/db/channels';
import type { ForgeDatabase } from '../../src/db/types';
import { PlatformUnreachableError } from '../../src/contract/errors';
import { backendKinds, nextNotification, pgliteBackend, type TestBackend } from './backends';

function version(name: string, source: string, extra: Partial<NewToolVersion> = {}): NewToolVersion {
  return {
    name,
    contentHash: createHash('sha256').update(source).digest('hex'),
    sourceTs: source,
    compiledJs: `/* compiled */ ${source}`,
    testInput: { n: 1 },
    description: `tool ${name}`,
    verdict: { status: 'passed', durationMs: 3 },
    ...extra,
  };
}

async function rows<T>(database: ForgeDatabase, query: ReturnType<typeof sql>): Promise<T[]> {
  const result = (await database.db.execute(query)) as unknown as { rows: T[] };
  return result.rows;
}

const journalEntries = (): number =>
  (JSON.parse(readFileSync(path.join(migrationsFolder(), 'meta', '_journal.json'), 'utf8')) as { entries: unknown[] }).entries.length;

describe.each(backendKinds())('tool store on $kind', ({ make }) => {
  let backend: TestBackend;
  let database: ForgeDatabase;
  let store: ToolStore;

  beforeAll(async () => {
    backend = make();
    database = await backend.open();
    store = createToolStore(database);
  });

  afterAll(async () => {
    await database?.close();
    await backend?.dispose();
  });

  /** What the tool activities need, with this suite's store and nothing on disk. */
  const activityDeps = (): ToolActivityDeps => ({
    store,
    builtinTools: [],
    maxSourceBytes: 1_000_000,
    writeVersionFiles: async () => undefined,
    publish: async () => ({ generation: 0, tools: 0 }),
    sandbox: { taskQueue: 'unused', maxTimeoutMs: 1_000 },
  });

  test('migrations create the tables, and re-applying them is a no-op', async () => {
    const tables = await rows<{ table_name: string }>(
      database,
      sql`SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' ORDER BY table_name`,
    );
    expect(tables.map((t) => t.table_name)).toEqual(
      expect.arrayContaining(['active_tools', 'events', 'forge_migrations', 'tool_version_counters', 'tool_versions']),
    );
    await store.insertVersion(version('survives_reopen', 'a'));

    if (backend.kind === 'pglite') {
      // PGlite is single-process and single-handle: close, then reopen the same data directory.
      await database.close();
      database = await backend.open();
      store = createToolStore(database);
    } else {
      // Two more handles migrating concurrently, as two workers starting together would.
      const [a, b] = await Promise.all([backend.open(), backend.open()]);
      await Promise.all([a.close(), b.close()]);
    }
    const applied = await rows<{ n: number | string }>(database, sql`SELECT count(*) AS n FROM drizzle.__drizzle_migrations`);
    expect(Number(applied[0].n)).toBe(journalEntries());
    expect((await store.getVersion('survives_reopen', 1))?.sourceTs).toBe('a');
  });

  test('insertVersion is idempotent on (name, content hash)', async () => {
    const first = await store.insertVersion(version('idem', 'export default 1'));
    const again = await store.insertVersion(version('idem', 'export default 1', { workflowId: 'other-run' }));
    const second = await store.insertVersion(version('idem', 'export default 2'));
    expect(first).toMatchObject({ version: 1, created: true });
    expect(again).toMatchObject({ version: 1, created: false });
    expect(again.row.workflowId).toBeNull(); // the retried call wrote nothing
    expect(second).toMatchObject({ version: 2, created: true });
    const listed = await store.listVersions('idem');
    expect(listed.map((v) => v.version)).toEqual([1, 2]);
    expect(listed[0]).toMatchObject({ testInput: { n: 1 }, verdict: { status: 'passed', durationMs: 3 } });
    expect(listed[0].createdAt).toBeInstanceOf(Date);
    expect((await store.getVersionByHash('idem', second.row.contentHash))?.version).toBe(2);
  });

  test('20 concurrent inserts of distinct content for one tool get versions 1..20', async () => {
    const results = await Promise.all(Array.from({ length: 20 }, (_, i) => store.insertVersion(version('racer', `export default ${i}`))));
    expect(results.map((r) => r.version).sort((a, b) => a - b)).toEqual(Array.from({ length: 20 }, (_, i) => i + 1));
    expect(results.every((r) => r.created)).toBe(true);
    const stored = await store.listVersions('racer');
    expect(new Set(stored.map((v) => v.contentHash)).size).toBe(20);
  });

  test('concurrent inserts of the same content persist it once', async () => {
    const results = await Promise.all(Array.from({ length: 8 }, () => store.insertVersion(version('same', 'export default "same"'))));
    expect(new Set(results.map((r) => r.version))).toEqual(new Set([1]));
    expect(results.filter((r) => r.created)).toHaveLength(1);
  });

  test('the reads of a deployment: the active version with its hash, and some pointers with the newest event id in one statement', async () => {
    expect(await store.getActiveWithHash('pointer_none')).toBeUndefined();
    const committed = await store.commitVersion(version('pointer_a', 'a1'), { workflowId: 'wf-pointer-a' });
    await store.insertVersion(version('pointer_b', 'b1'));
    expect(await store.getActiveWithHash('pointer_a')).toEqual({ version: committed.version, contentHash: committed.row.contentHash });

    const [newest] = await store.listEvents({ limit: 1 });
    const read = await store.getActivePointers(['pointer_a', 'pointer_b', 'pointer_none']);
    expect(read).toEqual({ newestEventId: newest.id, active: new Map([['pointer_a', committed.version]]) });
    expect(await store.getActivePointers([])).toEqual({ newestEventId: newest.id, active: new Map() });

    // What a worker's start checks agent-tools/ against: the hashes of the stored bytes, computed by the database.
    const sha256 = (text: string) => createHash('sha256').update(text, 'utf8').digest('hex');
    const fingerprints = await store.listActiveFingerprints();
    expect(fingerprints.find((f) => f.name === 'pointer_a')).toEqual({
      name: 'pointer_a',
      version: committed.version,
      contentHash: committed.row.contentHash,
      sourceSha256: sha256(committed.row.sourceTs),
      compiledSha256: sha256(committed.row.compiledJs),
    });
    expect(fingerprints.map((f) => f.name)).toEqual((await store.listActive()).map((a) => a.name));
  });

  test('activate moves the pointer in one step, logs it and notifies forge_tools', async () => {
    await store.insertVersion(version('act', 'v1'));
    await store.insertVersion(version('act', 'v2'));
    const heard: string[] = [];
    const unlisten = await database.listen(TOOLS_CHANNEL, (name) => heard.push(name));
    const first = await nextNotification(database, TOOLS_CHANNEL);
    const result = await store.activate('act', 1, { workflowId: 'tool-deploy/act/1' });
    expect(await first.payload).toBe('act');
    expect(result).toEqual({ name: 'act', version: 1, previousVersion: undefined, changed: true });
    expect(await store.getActive('act')).toMatchObject({ name: 'act', version: 1 });

    const moved = await store.activate('act', 2);
    expect(moved).toMatchObject({ version: 2, previousVersion: 1, changed: true });
    const same = await store.activate('act', 2);
    expect(same).toMatchObject({ version: 2, changed: false });

    await expect(store.activate('act', 99)).rejects.toBeInstanceOf(ToolVersionNotFoundError);
    expect((await store.getActive('act'))?.version).toBe(2);

    await waitUntil(() => heard.length >= 2);
    await new Promise((r) => setTimeout(r, 100)); // a no-op activation must not notify
    expect(heard).toEqual(['act', 'act']);
    await Promise.all([unlisten(), first.stop()]);

    const log = await store.listEvents({ subject: 'act' });
    expect(log.map((e) => e.kind)).toEqual(['tool.activated', 'tool.activated', 'tool.version_created', 'tool.version_created']);
    expect(log[1]).toMatchObject({ detail: { version: 1, previousVersion: null }, workflowId: 'tool-deploy/act/1' });
    expect((await store.listActive()).map((a) => a.name)).toContain('act');
  });

  test('commitVersion stores and activates in one step; concurrent commits end on the highest version', async () => {
    const heard: string[] = [];
    const unlisten = await database.listen(TOOLS_CHANNEL, (name) => heard.push(name));
    const results = await Promise.all(
      Array.from({ length: 20 }, (_, i) => store.commitVersion(version('committer', `export default ${i}`), { workflowId: `wf-${i}` })),
    );
    expect(results.map((r) => r.version).sort((a, b) => a - b)).toEqual(Array.from({ length: 20 }, (_, i) => i + 1));
    // Insert and activation share the lock, so each commit moved the pointer from the version just before it.
    for (const r of results) expect(r.previousVersion).toBe(r.version === 1 ? undefined : r.version - 1);
    expect((await store.getActive('committer'))?.version).toBe(20);

    // A retried commit of the content that is active now changes nothing.
    const latest = results.findIndex((r) => r.version === 20);
    const retry = await store.commitVersion(version('committer', `export default ${latest}`));
    expect(retry).toMatchObject({ version: 20, created: false, changed: false, previousVersion: 20 });
    await waitUntil(() => heard.length >= 20);
    await new Promise((r) => setTimeout(r, 100));
    expect(heard.filter((n) => n === 'committer')).toHaveLength(20);
    await unlisten();
  });

  // The commit writes its version, counter, pointer, quarantine, events and NOTIFY in a few combined statements: the
  // events and the counter are checked against the rows themselves, after a race, so no write can go missing or be
  // attributed to another run without this failing.
  test('after 12 concurrent commits, each version has exactly its own version_created and tool.activated events, the counter is at the highest, the quarantine is over', async () => {
    const name = 'ledgered';
    await store.commitVersion(version(name, 'v1', { workflowId: 'wf-first' }), { workflowId: 'wf-first' });
    expect(
      await store.quarantine({ name, runKey: 'rk-ledgered', failedVersion: 1, reason: { why: 'its package broke' } }, { workflowId: 'reverify/rk' }),
    ).toMatchObject({
      state: 'quarantined',
    });
    expect((await store.listQuarantined()).map((q) => q.name)).toContain(name);

    const results = await Promise.all(
      Array.from({ length: 12 }, (_, i) => store.commitVersion(version(name, `export default ${i}`, { workflowId: `wf-${i}` }), { workflowId: `wf-${i}` })),
    );
    const stored = await store.listVersions(name);
    expect(stored.map((row) => row.version)).toEqual(Array.from({ length: 13 }, (_, i) => i + 1));
    expect(results.map((r) => r.version).sort((a, b) => a - b)).toEqual(stored.slice(1).map((row) => row.version));
    const events = (await store.listEvents({ subject: name, limit: 1000 })).reverse();
    const pick = (kind: string) => events.filter((e) => e.kind === kind).map((e) => ({ detail: e.detail, workflowId: e.workflowId }));
    const byVersion = (a: { detail: unknown }, b: { detail: unknown }) => (a.detail as { version: number }).version - (b.detail as { version: number }).version;
    expect(pick('tool.version_created').sort(byVersion)).toEqual(
      stored.map((row) => ({ detail: { version: row.version, contentHash: row.contentHash }, workflowId: row.workflowId })),
    );
    // In commit order: v1; then, the tool quarantined (nothing active), v2 from none; each later one from the one before.
    expect(pick('tool.activated')).toEqual(
      stored.map((row) => ({ detail: { version: row.version, previousVersion: row.version <= 2 ? null : row.version - 1 }, workflowId: row.workflowId })),
    );
    // Each version's creation is logged before its activation.
    const at = (kind: string, v: number) => events.findIndex((e) => e.kind === kind && (e.detail as { version: number }).version === v);
    for (const row of stored) expect(at('tool.version_created', row.version)).toBeLessThan(at('tool.activated', row.version));
    const [counter] = await rows<{ last_version: number }>(database, sql`SELECT last_version FROM tool_version_counters WHERE name = ${name}`);
    expect(Number(counter.last_version)).toBe(13);
    expect(await store.getActive(name)).toMatchObject({ version: 13 });
    expect((await store.listQuarantined()).map((q) => q.name)).not.toContain(name);
  });

  test('a version written around the store, above the counter, is never numbered again: the next commit goes past it', async () => {
    const name = 'around';
    await store.commitVersion(version(name, 'v1'), { workflowId: 'wf-around-1' });
    await database.db.execute(
      sql`INSERT INTO tool_versions (name, version, content_hash, source_ts, compiled_js, verdict) VALUES (${name}, 7, 'by-hand', 'x', 'x', '{}'::jsonb)`,
    );
    const next = await store.commitVersion(version(name, 'v2'), { workflowId: 'wf-around-2' });
    expect(next).toMatchObject({ version: 8, created: true, previousVersion: 1, changed: true });
    const [counter] = await rows<{ last_version: number }>(database, sql`SELECT last_version FROM tool_version_counters WHERE name = ${name}`);
    expect(Number(counter.last_version)).toBe(8);
  });

  // Found by test/chaos/load-with-faults (seed 162099135): a deployment's commit landed, the worker died before the
  // step was recorded, newer deployments committed, and the replayed commit made the older version active again.
  test('a commit that runs again for its run after newer versions landed reports its first result and activates nothing', async () => {
    const first = await store.commitVersion(version('again', 'v1'), { workflowId: 'tool-deploy/again/one' });
    expect(first).toMatchObject({ version: 1, created: true, changed: true });
    await store.commitVersion(version('again', 'v2'), { workflowId: 'tool-deploy/again/two' });
    const replayed = await store.commitVersion(version('again', 'v1'), { workflowId: 'tool-deploy/again/one' });
    expect(replayed).toMatchObject({ version: 1, created: false, changed: false, previousVersion: undefined });
    expect((await store.getActive('again'))?.version).toBe(2);
    // Another run that deploys the same content again is a redeployment: it does activate it.
    const redeploy = await store.commitVersion(version('again', 'v1'), { workflowId: 'tool-deploy/again/three' });
    expect(redeploy).toMatchObject({ version: 1, created: false, changed: true, previousVersion: 2 });
    expect((await store.getActive('again'))?.version).toBe(1);
  });

  // Found 2026-11-29 through the SDK: content A, then B, then A again reported "v1 of again is active" while v2 stayed
  // active. The client names a deployment by its content (tool-deploy/<name>/<hash>), so the third run reuses the first
  // one's workflow ID, and only the run ID tells a redeployment from the first run's commit running again.
  test('a later run of the same deployment ID is a redeployment: it activates its version, and its restore undoes only its own', async () => {
    const id = 'tool-deploy/rerun/a';
    const first = await store.commitVersion(version('rerun', 'v1'), { workflowId: id, runId: 'run-1' });
    expect(first).toMatchObject({ version: 1, created: true, changed: true });
    await store.commitVersion(version('rerun', 'v2'), { workflowId: 'tool-deploy/rerun/b', runId: 'run-b' });
    // The first run's commit again (its step ran twice): nothing moves.
    expect(await store.commitVersion(version('rerun', 'v1'), { workflowId: id, runId: 'run-1' })).toMatchObject({ changed: false });
    expect((await store.getActive('rerun'))?.version).toBe(2);
    // A second run under the same ID, before it commits: its restore finds no activation of its own and changes nothing.
    expect(await store.restoreActive('rerun', { version: 1 }, { workflowId: id, runId: 'run-2' })).toEqual({ changed: false });
    expect((await store.getActive('rerun'))?.version).toBe(2);
    const again = await store.commitVersion(version('rerun', 'v1'), { workflowId: id, runId: 'run-2' });
    expect(again).toMatchObject({ version: 1, created: false, changed: true, previousVersion: 2 });
    expect((await store.getActive('rerun'))?.version).toBe(1);
    // Its commit running again reports the same and moves nothing; its own restore undoes it.
    expect(await store.commitVersion(version('rerun', 'v1'), { workflowId: id, runId: 'run-2' })).toMatchObject({
      version: 1,
      changed: false,
      previousVersion: 2,
    });
    expect(await store.restoreActive('rerun', { version: 2 }, { workflowId: id, runId: 'run-2' })).toEqual({ changed: true });
    expect((await store.getActive('rerun'))?.version).toBe(2);
  });

  test('deactivate removes the pointer, keeps the versions and notifies; a second call changes nothing', async () => {
    await store.insertVersion(version('deact', 'v1'));
    await store.activate('deact', 1);
    const heard = await nextNotification(database, TOOLS_CHANNEL);
    expect(await store.deactivate('deact')).toEqual({ name: 'deact', previousVersion: 1 });
    expect(await heard.payload).toBe('deact');
    await heard.stop();
    expect(await store.getActive('deact')).toBeUndefined();
    expect(await store.listVersions('deact')).toHaveLength(1);
    expect(await store.deactivate('deact')).toEqual({ name: 'deact', previousVersion: undefined });
  });

  test('restoreActive undoes only while the run being compensated is still the active one, atomically', async () => {
    await store.commitVersion(version('restorer', 'v1'));
    await store.commitVersion(version('restorer', 'v2')); // the run to compensate activated v2 over v1
    await store.commitVersion(version('restorer', 'v3')); // and a newer deployment committed since
    expect(await store.restoreActive('restorer', { version: 1, ifActive: 2 })).toEqual({ changed: false });
    expect((await store.getActive('restorer'))?.version).toBe(3);
    // While ours is still active, the previous version comes back; a second call finds it done.
    expect(await store.restoreActive('restorer', { version: 2, ifActive: 3 })).toEqual({ changed: true });
    expect((await store.getActive('restorer'))?.version).toBe(2);
    expect(await store.restoreActive('restorer', { version: 2, ifActive: 3 })).toEqual({ changed: false });
    // No version before: the tool is deactivated.
    expect(await store.restoreActive('restorer', { ifActive: 2 })).toEqual({ changed: true });
    expect(await store.getActive('restorer')).toBeUndefined();

    // Concurrent: 10 compensations of v4 race 10 newer commits; whichever order the lock gives, a newer commit is
    // never undone (each restore either finds v4 active and restores v3, or finds a newer version and does nothing).
    await store.commitVersion(version('racer', 'v1'));
    await store.commitVersion(version('racer', 'v2'));
    await Promise.all([
      ...Array.from({ length: 10 }, (_, i) => store.commitVersion(version('racer', `newer ${i}`))),
      ...Array.from({ length: 10 }, () => store.restoreActive('racer', { version: 1, ifActive: 2 })),
    ]);
    const active = (await store.getActive('racer'))?.version;
    const events = (await store.listEvents({ subject: 'racer', limit: 100 })).reverse();
    const lastActivation = events.filter((e) => e.kind === 'tool.activated').at(-1);
    expect(lastActivation?.detail).toMatchObject({ version: active });
    // v1 can only have come back right after v2, never after a newer commit.
    for (const [i, e] of events.entries()) {
      if (e.kind === 'tool.activated' && (e.detail as { version: number }).version === 1 && i > 0) {
        const before = events
          .slice(0, i)
          .filter((x) => x.kind === 'tool.activated')
          .at(-1);
        expect((before?.detail as { version: number }).version).toBe(2);
      }
    }
  });

  test('restoreActive for a run that never learnt whether its commit landed undoes only what that run activated', async () => {
    // A cancelled deployment's compensation, without `ifActive`: its commit's result never reached it.
    await store.commitVersion(version('unsure', 'v1'), { workflowId: 'deploy-a' });
    // Run B's commit never landed, and run C deployed meanwhile: B's compensation must not undo C.
    await store.commitVersion(version('unsure', 'v2'), { workflowId: 'deploy-c' });
    expect(await store.restoreActive('unsure', { version: 1 }, { workflowId: 'deploy-b' })).toEqual({ changed: false });
    expect((await store.getActive('unsure'))?.version).toBe(2);
    // Run D's commit landed (v3) although D did not hear of it: its compensation finds D's activation and undoes it.
    await store.commitVersion(version('unsure', 'v3'), { workflowId: 'deploy-d' });
    expect(await store.restoreActive('unsure', { version: 2 }, { workflowId: 'deploy-d' })).toEqual({ changed: true });
    expect((await store.getActive('unsure'))?.version).toBe(2);
    expect(await store.restoreActive('unsure', { version: 2 }, { workflowId: 'deploy-d' })).toEqual({ changed: false });
    // A first deployment's: nothing was active before it, so the tool is deactivated.
    await store.commitVersion(version('unsure_first', 'v1'), { workflowId: 'deploy-e' });
    expect(await store.restoreActive('unsure_first', {}, { workflowId: 'deploy-e' })).toEqual({ changed: true });
    expect(await store.getActive('unsure_first')).toBeUndefined();
    expect(await store.restoreActive('unsure_first', {}, { workflowId: 'deploy-e' })).toEqual({ changed: false });
  });

  test('versions only increase, also after the tool was removed', async () => {
    await store.insertVersion(version('phoenix', 'v1'));
    await store.insertVersion(version('phoenix', 'v2'));
    await store.activate('phoenix', 2);
    expect(await store.removeTool('phoenix')).toEqual({ name: 'phoenix', previousVersion: 2, removedVersions: 2 });
    expect(await store.listVersions('phoenix')).toEqual([]);
    expect(await store.getActive('phoenix')).toBeUndefined();
    const reborn = await store.insertVersion(version('phoenix', 'v1'));
    expect(reborn).toMatchObject({ version: 3, created: true });
    expect(await store.removeTool('never_existed')).toMatchObject({ removedVersions: 0 });
  });

  // Issue 9: a local activity whose marker was lost runs again after its commit; the second run of a step must report
  // what its run did, not act again on the state it finds (a rollback applied twice went v10 → v9 → v8).
  test('a rollback and a delete that run again for the same workflow do nothing twice and report the first result', async () => {
    for (let i = 1; i <= 3; i++) await store.insertVersion(version('twice', `v${i}`));
    await store.activate('twice', 3);
    const activities = createToolActivities(activityDeps());
    const rollback = { name: 'twice', workflowId: 'tool-rollback/twice/previous-test' };
    const first = await activities.activateEarlierVersion(rollback);
    expect(first).toEqual({ version: 2, previousVersion: 3 });
    expect(await activities.activateEarlierVersion(rollback)).toEqual(first);
    expect((await store.getActive('twice'))?.version).toBe(2);
    const activations = (await store.listEvents({ subject: 'twice' })).filter((e) => e.workflowId === rollback.workflowId);
    expect(activations).toHaveLength(1);
    // Another rollback is another run: it moves on.
    expect(await activities.activateEarlierVersion({ name: 'twice', workflowId: 'tool-rollback/twice/previous-other' })).toEqual({
      version: 1,
      previousVersion: 2,
    });

    const removal = { name: 'twice', workflowId: 'tool-delete/twice/test' };
    const removed = await activities.removeTool(removal);
    expect(removed).toEqual({ previousVersion: 1, removedVersions: 3 });
    expect(await activities.removeTool(removal)).toEqual(removed);
    // A delete of another run finds nothing.
    expect(await activities.removeTool({ name: 'twice', workflowId: 'tool-delete/twice/other' })).toEqual({ previousVersion: undefined, removedVersions: 0 });
  });

  // A deployment whose test runs in its workflow task is one task from start to commit: a worker killed after the
  // commit loses the whole task, and the run starts again from validate, which then finds its own content active.
  test('validate tells a run that starts again after its own commit from a later run of the same content', async () => {
    const steps = createToolInnerSteps(activityDeps());
    const submission = { name: 'restarted', source: 'export default {};', testInput: {} };
    const input = { ...submission, contentHash: toolContentHash(submission) };
    const run = { workflowId: `tool-deploy/restarted/${input.contentHash.slice(0, 16)}`, runId: 'run-one' };
    await store.commitVersion(version('restarted', 'v1'), { workflowId: 'tool-deploy/restarted/earlier' });
    const verdict = { status: 'passed' as const, durationMs: 1 };
    await steps.commitVersion({ ...input, verdict, workflowId: run.workflowId, runId: run.runId });
    // The same run again: not "unchanged"; v1 was active before it, and its commit reports what it did.
    expect(await steps.validateDeployment(input, run)).toMatchObject({ unchanged: false, activeVersion: 1 });
    expect(await steps.commitVersion({ ...input, verdict, workflowId: run.workflowId, runId: run.runId })).toMatchObject({ version: 2, previousVersion: 1 });
    // A later run of the same content (same workflow ID, another run): unchanged, as before.
    expect(await steps.validateDeployment(input, { ...run, runId: 'run-two' })).toMatchObject({ unchanged: true, activeVersion: 2 });
    expect(await steps.validateDeployment(input)).toMatchObject({ unchanged: true, activeVersion: 2 });
  });

  test('notify and listen work outside the store too', async () => {
    const heard = await nextNotification(database, 'forge_test_channel');
    await database.notify('forge_test_channel', 'hello');
    expect(await heard.payload).toBe('hello');
    await heard.stop();
    await expect(database.listen('Bad Channel', () => undefined)).rejects.toThrow(TypeError);
  });

  test('FORGE_SCHEMA puts the tables in their own schema', async () => {
    let other: ForgeDatabase;
    let otherBackend: TestBackend | undefined;
    if (backend.kind === 'pglite') {
      // PGlite allows one handle per directory, so use a second data directory.
      otherBackend = pgliteBackend();
      other = await otherBackend.open('forge_custom');
    } else {
      other = await backend.open('forge_custom');
    }
    try {
      const otherStore = createToolStore(other);
      await otherStore.insertVersion(version('schema_check', 'x'));
      const found = await rows<{ table_schema: string }>(
        other,
        sql`SELECT table_schema FROM information_schema.tables WHERE table_name = 'tool_versions' ORDER BY 1`,
      );
      expect(found.map((f) => f.table_schema)).toContain('forge_custom');
      // The default-schema store does not see the other schema's rows.
      expect(await store.listVersions('schema_check')).toEqual([]);
    } finally {
      await other.close();
      await otherBackend?.dispose();
    }
  });
});

describe('opening a database', () => {
  test('a second handle on the same PGlite directory is refused with a clear error', async () => {
    const backend = pgliteBackend();
    const first = await backend.open();
    try {
      const second = backend.open();
      await expect(second).rejects.toBeInstanceOf(DatabaseOpenError);
      await expect(second).rejects.toThrow(/already open/);
    } finally {
      await first.close();
    }
    const reopened = await backend.open(); // the lock is released on close
    await reopened.close();
    await backend.dispose();
  });

  test('an unreachable PostgreSQL is a PlatformUnreachableError naming the address, not the password', async () => {
    const opened = openPostgres('postgres://forge:secret@127.0.0.1:1/forge', 'public');
    await expect(opened).rejects.toBeInstanceOf(PlatformUnreachableError);
    await expect(opened).rejects.toThrow(/127\.0\.0\.1:1/);
    await expect(opened).rejects.not.toThrow(/secret/);
  });
});

async function waitUntil(check: () => boolean, ms = 5_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 20));
  }
}
