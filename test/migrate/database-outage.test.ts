import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { postgresBackend } from '../db/backends';
import { startTemporal, startTestPlatform, type TestPlatform } from '../helpers/platform';
import { relationExists, TcpProxy, waitUntil } from './helpers';
import { describeIf } from '../helpers/skip';

const url = process.env.DATABASE_URL;

// PostgreSQL only: PGlite is in the worker's own process, so it cannot go away while the worker stays up.
describeIf(url, 'DATABASE_URL is not set (PostgreSQL only; CI sets it)')('while PostgreSQL is down', () => {
  let env: TestWorkflowEnvironment;
  let platform: TestPlatform;
  let proxy: TcpProxy;
  beforeAll(async () => {
    const target = new URL(url!);
    proxy = new TcpProxy(target.hostname, Number(target.port || 5432));
    await proxy.start();
    const viaProxy = new URL(url!);
    viaProxy.hostname = '127.0.0.1';
    viaProxy.port = String(proxy.port);
    env = await startTemporal();
    platform = await startTestPlatform(env, 'postgres', { backend: postgresBackend(viaProxy.toString()) });
  }, 120_000);
  afterAll(async () => {
    await proxy?.start().catch(() => undefined); // teardown drops the database through the proxy
    await platform?.teardown();
    await proxy?.stop();
    await env?.teardown();
  });

  test('waits while the database cannot be reached, then applies once it is back', async () => {
    await proxy.stop();
    const started = platform.forge.migrateSchema({ name: 'outage', sql: 'CREATE TABLE agent_outage (id int);' });
    const handle = env.client.workflow.getHandle('schema-migrate/outage');
    // The run is under way and retrying its database step; it has not ended.
    await waitUntil(async () => (await handle.describe().catch(() => undefined))?.status.name === 'RUNNING', 10_000, 'the run to start');
    await new Promise((r) => setTimeout(r, 3_000));
    expect((await handle.describe()).status.name).toBe('RUNNING');
    const progress = await handle.query<{ stage: string }>('progress');
    expect(['validate', 'apply']).toContain(progress.stage);

    await proxy.start(); // same port: the database is back
    const result = await started;
    expect(result).toMatchObject({ status: 'applied', name: 'outage' });
    expect(await relationExists(platform.database, 'agent_outage')).toBe(true);
    const migrations = await platform.forge.listMigrations();
    expect(migrations.migrations.filter((m) => m.name === 'outage')).toHaveLength(1);
  }, 60_000);

  test('a tool deployment waits too, then becomes active once the database is back', async () => {
    const source = `import { z } from 'zod';
export default { name: 'outage_tool', inputSchema: z.object({}), async execute() { return { ok: true }; } };`;
    await proxy.stop();
    const handle = await platform.forge.startDeployTool({ name: 'outage_tool', source, testInput: {} });
    await new Promise((r) => setTimeout(r, 3_000));
    const described = await env.client.workflow.getHandle(handle.workflowId).describe();
    expect(described.status.name).toBe('RUNNING');
    expect((await handle.progress())?.stage).toBe('validate');

    await proxy.start();
    const result = await handle.result();
    expect(result).toMatchObject({ status: 'active', name: 'outage_tool', version: 1 });
    expect((await platform.forge.listTools()).tools.map((t) => t.name)).toContain('outage_tool');
  }, 60_000);
});
