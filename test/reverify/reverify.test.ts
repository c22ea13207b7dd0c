import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { REVERIFY_SCHEDULE_ID, type ReverifySummary } from '../../src/client';
import { createReverifyStore } from '../../src/db';
import { ensureReverifySchedule } from '../../src/platform/reverify-schedule';
import { ToolRegistry } from '../../src/registry';
import { sleep, until } from '../chaos/end-state';
import { startTestPlatform, useTemporal, type TestPlatform } from '../helpers/platform';
import { startTestInternet, type TestInternet } from '../helpers/test-internet';
import { projectNodeModules } from '../../src/sandbox/paths';
import { describeIf } from '../helpers/skip';
import { sql } from 'drizzle-orm';

const temporal = useTemporal();

/*
 * How a dependency rots here: a local package (an ES module under a temp dir that tools import by absolute path)
 * renames the export some tools call, as a package's new major version does. Tools that import the renamed export
 * fail to load; tools that import only what stayed keep passing. Every tool reports its name to a server of the test's
 * own when its test runs, which is how the test counts sandbox runs per tool: a run writes nothing outside its own
 * directory, so the report goes over its network, to the test's "internet" (test/helpers/test-internet.ts), whose
 * server appends it to the log. The package lives among the installed packages, which a run may read.
 */
/** The test's server address: set once the test's internet is up (before any tool source is made). */
let SERVER_HOST = '';
const SERVER_PORT = 8080;
const pkgDir = mkdtempSync(path.join(projectNodeModules(), '.forge-reverify-pkg-'));
const lib = path.join(pkgDir, 'lib.mjs');
const runLog = path.join(pkgDir, 'runs.log');
const flakyMarker = path.join(pkgDir, 'fail-once');

const LIB_V1 = 'export function scale(n) { return n * 2; }\nexport const offset = 7;\n';
const LIB_V2 = '// 2.0: scale() is now multiply()\nexport function multiply(n, by = 2) { return n * by; }\nexport const offset = 7;\n';

/** A tool; `uses` says which export of the local package it imports (none: a pure tool). */
function tool(name: string, variant: string, uses?: 'scale' | 'offset', extra = ''): string {
  const imp = uses ? `import { ${uses} } from ${JSON.stringify(lib)};\n` : '';
  const value = uses === 'scale' ? 'scale(n)' : uses === 'offset' ? 'n + offset' : 'n + 1';
  return `${imp}import { z } from 'zod';
import { request } from 'node:http';
const post = (path: string, body: string) => new Promise<number>((resolve, reject) => {
  const req = request({ host: '${SERVER_HOST}', port: ${SERVER_PORT}, path, method: 'POST' }, (res) => { res.resume(); res.on('end', () => resolve(res.statusCode ?? 0)); });
  req.on('error', reject);
  req.end(body);
});
export default {
  name: '${name}',
  description: 'reverify test tool (${variant})',
  inputSchema: z.object({ n: z.number() }),
  async execute({ n }: { n: number }) {
    await post('/log', '${name} ${variant} ' + process.pid + '\\n');
    ${extra}
    await new Promise((r) => setTimeout(r, 50));
    return { value: ${value}, variant: '${variant}' };
  },
};
`;
}

/** Fails when the marker file is there (the server removes it and answers 500): the next test passes. */
const flakyExtra = `if ((await post('/flaky', '')) === 500) throw new Error('upstream hiccup');`;

/** The test's server: appends what /log is sent to the run log; /flaky answers 500 once per marker file. */
const serverSource = ([address]: [string, string]) => `
const fs = require('node:fs');
require('node:http').createServer((req, res) => {
  let body = '';
  req.on('data', (d) => (body += d));
  req.on('end', () => {
    if (req.url === '/log') fs.appendFileSync(${JSON.stringify(runLog)}, body);
    if (req.url === '/flaky') { try { fs.unlinkSync(${JSON.stringify(flakyMarker)}); res.statusCode = 500; } catch {} }
    res.end('ok');
  });
}).listen(8080, '${address}', () => console.log('ready'));`;

const QUARANTINED = ['rot_both_1', 'rot_both_2', 'rot_both_3'];
const DEGRADED = ['rot_new_1', 'rot_new_2', 'rot_new_3', 'rot_two_newer'];
const STABLE_PKG = ['pkg_offset_1', 'pkg_offset_2'];
const PLAIN = Array.from({ length: 20 }, (_, i) => `plain_${String(i).padStart(2, '0')}`);
const FLAKY = 'flaky_one';

function runsOf(name: string): number {
  return readFileSync(runLog, 'utf8')
    .split('\n')
    .filter((l) => l.split(' ')[0] === name).length;
}

/** The variants of a tool whose tests ran, in order. */
function variantsRun(name: string): string[] {
  return readFileSync(runLog, 'utf8')
    .split('\n')
    .filter((l) => l.split(' ')[0] === name)
    .map((l) => l.split(' ')[1]);
}

async function inBatches<T>(items: T[], size: number, fn: (item: T) => Promise<unknown>): Promise<void> {
  for (let i = 0; i < items.length; i += size) await Promise.all(items.slice(i, i + size).map(fn));
}

// (Root only: the test's own internet is a network namespace with a veth. CI runs as root.)
describeIf(process.getuid?.() === 0, "needs root: the test's own internet is a network namespace with a veth")(
  'scheduled re-verification with quarantine',
  () => {
    let platform: TestPlatform;
    let registry: ToolRegistry;
    let internet: TestInternet;

    beforeAll(async () => {
      writeFileSync(lib, LIB_V1);
      writeFileSync(runLog, '');
      // The sandbox runs each test as a user of its own: the package must be readable by it.
      chmodSync(pkgDir, 0o755);
      chmodSync(lib, 0o644);
      internet = await startTestInternet(serverSource);
      SERVER_HOST = internet.addresses[0];
      platform = await startTestPlatform(temporal(), 'pglite', { env: { FORGE_REVERIFY_INTERVAL: '2h' } });
      registry = await ToolRegistry.open({ dir: platform.config.agentToolsDir, pollIntervalMs: 100 });
    }, 120_000);

    afterAll(async () => {
      await registry?.close();
      await platform?.teardown();
      await internet?.stop();
      rmSync(pkgDir, { recursive: true, force: true });
    });

    test('the schedule exists once after two platform starts, as configured, and pause/resume work', async () => {
      const { client } = temporal();
      await platform.stopWorkers();
      await platform.startWorkers();
      const ids: string[] = [];
      for await (const s of client.schedule.list()) ids.push(s.scheduleId);
      expect(ids.filter((id) => id === REVERIFY_SCHEDULE_ID)).toHaveLength(1);
      const described = await client.schedule.getHandle(REVERIFY_SCHEDULE_ID).describe();
      expect(described.spec.intervals).toEqual([expect.objectContaining({ every: 2 * 3_600_000 })]);
      expect(described.policies.overlap).toBe('SKIP');
      expect(described.action).toMatchObject({ workflowType: 'reverifyToolsWorkflow', taskQueue: platform.config.taskQueues.control });

      // A start with another interval updates the one schedule; a pause outlives it.
      const paused = await platform.forge.pauseReverify('maintenance');
      expect(paused).toMatchObject({ paused: true, note: 'maintenance', intervalMs: 2 * 3_600_000 });
      expect(await ensureReverifySchedule(client, { ...platform.config, reverify: { ...platform.config.reverify, intervalMs: 30 * 60_000 } })).toBe('updated');
      const after = await platform.forge.reverifySchedule();
      expect(after).toMatchObject({ paused: true, note: 'maintenance' });
      expect((await client.schedule.getHandle(REVERIFY_SCHEDULE_ID).describe()).spec.intervals).toEqual([expect.objectContaining({ every: 30 * 60_000 })]);
      const resumed = await platform.forge.resumeReverify();
      expect(resumed.paused).toBe(false);
      expect(resumed.nextRuns.length).toBeGreaterThan(0);
      await ensureReverifySchedule(client, platform.config);
    }, 60_000);

    test('a package that renames an export: exactly its users are quarantined or degraded, a flaky tool is reported', async () => {
      const { forge } = platform;
      const deploy = async (name: string, variant: string, uses?: 'scale' | 'offset', extra?: string) => {
        const r = await forge.deployTool({ name, source: tool(name, variant, uses, extra), testInput: { n: 3 } });
        expect({ status: r.status, why: r.status === 'active' ? undefined : JSON.stringify(r).slice(0, 600) }).toEqual({ status: 'active', why: undefined });
        return r.version!;
      };
      await inBatches(PLAIN, 4, (n) => deploy(n, 'v1'));
      await inBatches(STABLE_PKG, 4, (n) => deploy(n, 'v1', 'offset'));
      await inBatches(QUARANTINED, 4, async (n) => {
        await deploy(n, 'v1', 'scale');
        await deploy(n, 'v2', 'scale');
      });
      await inBatches(DEGRADED, 4, async (n) => {
        await deploy(n, 'v1');
        await deploy(n, 'v2', 'scale');
        if (n === 'rot_two_newer') await deploy(n, 'v3', 'scale');
      });
      await deploy(FLAKY, 'v1', undefined, flakyExtra);
      const total = PLAIN.length + STABLE_PKG.length + QUARANTINED.length + DEGRADED.length + 1;
      expect(total).toBe(30);
      await registry.waitFor('rot_two_newer', 3, 10_000);

      // The package's 2.0 lands; the flaky tool's upstream hiccups once.
      writeFileSync(lib, LIB_V2);
      writeFileSync(flakyMarker, '');
      chmodSync(flakyMarker, 0o666);
      writeFileSync(runLog, '');

      const summary: ReverifySummary = await forge.reverifyNow();
      expect(summary.counts).toMatchObject({ tested: 30, passed: 30 - QUARANTINED.length - DEGRADED.length - 1 });
      expect(summary.quarantined.sort()).toEqual(QUARANTINED);
      expect(summary.degraded.sort()).toEqual(DEGRADED);
      expect(summary.flaky).toEqual([FLAKY]);
      const byName = new Map(summary.tools.map((t) => [t.name, t]));
      expect(byName.size).toBe(30);
      for (const n of [...PLAIN, ...STABLE_PKG]) expect(byName.get(n)).toMatchObject({ verdict: 'passed', action: 'none', version: 1 });
      expect(byName.get('rot_both_1')).toMatchObject({ version: 2, verdict: 'failed', action: 'quarantined' });
      expect(byName.get('rot_both_1')?.error).toMatch(/scale/);
      expect(byName.get('rot_new_1')).toMatchObject({ version: 2, verdict: 'failed', action: 'degraded', activeVersion: 1 });
      expect(byName.get('rot_two_newer')).toMatchObject({ version: 3, action: 'degraded', activeVersion: 1 });
      expect(byName.get(FLAKY)).toMatchObject({ verdict: 'failed', action: 'flaky' });

      // Each passing tool was tested once; a failing one twice, then its earlier versions newest first.
      for (const n of [...PLAIN, ...STABLE_PKG]) expect(runsOf(n)).toBe(1);
      expect(runsOf(FLAKY)).toBe(2);
      // (The renamed import loads as undefined and fails when called, so every test of a broken version ran.)
      expect(variantsRun('rot_new_1')).toEqual(['v2', 'v2', 'v1']);
      expect(variantsRun('rot_two_newer')).toEqual(['v3', 'v3', 'v2', 'v1']);
      expect(variantsRun('rot_both_1')).toEqual(['v2', 'v2', 'v1']);

      // The state, through the store, forge tools and the registry.
      const listed = new Map((await forge.listTools()).tools.map((t) => [t.name, t]));
      for (const n of QUARANTINED) expect(listed.get(n)).toMatchObject({ status: 'quarantined', activeVersion: null, reverification: { failedVersion: 2 } });
      for (const n of DEGRADED) expect(listed.get(n)).toMatchObject({ status: 'degraded', activeVersion: 1 });
      for (const n of [...PLAIN, ...STABLE_PKG, FLAKY]) expect(listed.get(n)).toMatchObject({ status: 'active', activeVersion: 1 });
      await until(() => QUARANTINED.every((n) => registry.get(n) === undefined), 10_000, 'the registry to drop the quarantined tools');
      for (const n of DEGRADED) await registry.waitFor(n, 1, 10_000);
      expect(await registry.invoke('rot_new_2', { n: 3 })).toMatchObject({ ok: true, version: 1, output: { value: 4, variant: 'v1' } });

      const events = await platform.workers.store.listEvents({ subject: 'rot_both_2' });
      const quarantined = events.find((e) => e.kind === 'tool.quarantined');
      expect(quarantined?.workflowId).toBe(summary.workflowId);
      expect(quarantined?.detail).toMatchObject({
        failedVersion: 2,
        verdict: 'failed',
        retestVerdict: 'failed',
        earlierTried: [{ version: 1, verdict: 'failed' }],
      });
      expect(events.map((e) => e.kind)).toContain('tool.deactivated');
      expect((await platform.workers.store.listEvents({ subject: 'rot_new_3' })).find((e) => e.kind === 'tool.degraded')?.detail).toMatchObject({
        failedVersion: 2,
        activeVersion: 1,
      });
      expect((await platform.workers.store.listEvents({ subject: FLAKY })).map((e) => e.kind)).toContain('tool.reverify_flaky');

      // A recovered package does not bring anything back by itself: the next run tests only what is active.
      writeFileSync(lib, LIB_V1);
      writeFileSync(runLog, '');
      const next = await forge.reverifyNow();
      expect(next.counts.tested).toBe(30 - QUARANTINED.length);
      expect(next.quarantined).toEqual([]);
      expect(next.degraded).toEqual([]);
      expect(
        (await forge.listTools()).tools
          .filter((t) => t.status !== 'active')
          .map((t) => t.name)
          .sort(),
      ).toEqual([...DEGRADED, ...QUARANTINED].sort());
      for (const n of QUARANTINED) expect(runsOf(n)).toBe(0);

      // A deployment ends the quarantine.
      await deploy('rot_both_3', 'v3', 'offset');
      expect((await forge.listTools()).tools.find((t) => t.name === 'rot_both_3')).toMatchObject({ status: 'active', activeVersion: 3 });

      const schedule = await forge.reverifySchedule();
      expect(schedule.lastRun).toMatchObject({ workflowId: next.workflowId, status: 'COMPLETED', summary: { counts: next.counts } });
    }, 300_000);

    test('a run whose workers stop mid-batch resumes on new workers without re-testing what it recorded', async () => {
      const { client } = temporal();
      writeFileSync(runLog, '');
      const handle = await client.workflow.start('reverifyToolsWorkflow', {
        taskQueue: platform.config.taskQueues.control,
        workflowId: `tool-reverify/killed-${Date.now()}`,
        args: [{ batchSize: 4 }],
      });
      const runKey = handle.firstExecutionRunId;
      const recorded = () => createReverifyStore(platform.database).rowsOfRun(runKey);
      await until(async () => (await recorded()).length >= 8, 60_000, 'eight recorded tests');
      const recordedBefore = (await recorded()).map((r) => r.name);
      await platform.stopWorkers();
      await sleep(1_000);
      await platform.startWorkers();
      const summary = (await handle.result()) as ReverifySummary;
      const active = (await platform.workers.store.listActive()).length;
      expect(summary.counts.tested).toBe(active);
      expect(summary.counts.batches).toBeGreaterThan(2);
      expect(summary.quarantined).toEqual([]);
      const rows = await recorded();
      expect(new Set(rows.filter((r) => r.role === 'active').map((r) => r.name)).size).toBe(active);
      // What was recorded before the stop was not tested again after it; everything else was tested.
      expect(recordedBefore.length).toBeGreaterThanOrEqual(8);
      expect(recordedBefore.length).toBeLessThan(active);
      for (const n of recordedBefore) expect(runsOf(n)).toBe(1);
      for (const r of rows) expect(runsOf(r.name)).toBeGreaterThanOrEqual(1);
    }, 180_000);

    test('what is re-verified is the stored module the registries run, not the source compiled again', async () => {
      const { forge } = platform;
      const name = 'served_module';
      const deployed = await forge.deployTool({ name, source: tool(name, 'v1'), testInput: { n: 3 } });
      expect(deployed.status).toBe('active');
      // The stored module no longer matches its source (as an esbuild upgrade, or a module changed at rest, would
      // leave it): its source still compiles to a tool that passes, the module itself throws as it loads.
      await platform.database.db.execute(
        sql`UPDATE tool_versions SET compiled_js = compiled_js || ${'\nthrow new Error("the stored module, not the source");\n'} WHERE name = ${name}`,
      );
      writeFileSync(runLog, '');
      const summary: ReverifySummary = await forge.reverifyNow();
      const result = summary.tools.find((t) => t.name === name);
      expect(result).toMatchObject({ version: 1, verdict: 'failed', action: 'quarantined' });
      expect(result?.error).toMatch(/the stored module, not the source/);
      expect(summary.quarantined).toEqual([name]);
      expect(runsOf(name)).toBe(0); // its execute never ran: the module failed to load
    }, 120_000);
  },
);
