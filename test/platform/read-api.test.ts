import { READ_API_PATHS, readApiOf } from '../../src/contract/read-api';
import { startReadApi } from '../../src/platform/read-api';
import { sleep } from '../chaos/end-state';
import { startTestPlatform, useTemporal, type TestPlatform } from '../helpers/platform';
import { adderTool } from '../helpers/tools';

/**
 * Reads are not runs (issue 12): `forge tools` / `forge migrations` (ForgeClient.listTools / listMigrations) are
 * answered by the worker's read API, found through the control worker's identity, and start no workflow; without a
 * read API (FORGE_API_ADDRESS=off, or a client that cannot reach it) they still answer, through a query run.
 */
const temporal = useTemporal();

/** The `forge-query/...` runs on the platform's own control queue, as the Web UI's list would show them. */
async function queryRuns(platform: TestPlatform): Promise<string[]> {
  await sleep(1_000); // visibility trails the start of a run by a moment
  const ids: string[] = [];
  const query = `TaskQueue = "${platform.config.taskQueues.control}" AND WorkflowId STARTS_WITH "forge-query/"`;
  for await (const run of platform.env.client.workflow.list({ query })) ids.push(run.workflowId);
  return ids;
}

describe.each([
  ['with the read API', {}, 0],
  ['with FORGE_API_ADDRESS=off', { FORGE_API_ADDRESS: 'off' }, 2],
] as const)('%s', (_label, env, runs) => {
  let platform: TestPlatform;
  beforeAll(async () => {
    platform = await startTestPlatform(temporal(), 'pglite', { env });
  }, 120_000);
  afterAll(() => platform?.teardown());

  test(`tools and migrations read back; ${runs} query run(s) started`, async () => {
    await expect(platform.forge.deployTool({ name: 'read_back', source: adderTool('a', 'read_back'), testInput: { a: 1, b: 2 } })).resolves.toMatchObject({ status: 'active' });
    await expect(platform.forge.migrateSchema({ name: 'agent_read_back', sql: 'CREATE TABLE agent_read_back (id int)' })).resolves.toMatchObject({ status: 'applied' });
    expect((await platform.forge.listTools()).tools).toEqual([expect.objectContaining({ name: 'read_back', activeVersion: 1, status: 'active' })]);
    expect((await platform.forge.listMigrations()).migrations).toEqual([expect.objectContaining({ name: 'agent_read_back' })]);
    expect(await queryRuns(platform)).toHaveLength(runs);
  });
});

describe('the read API itself', () => {
  test('GET a known path: its JSON; another path: 404 naming the paths; another method: 405; a failing read: 503', async () => {
    const api = await startReadApi('127.0.0.1:0', {
      [READ_API_PATHS.tools]: async () => ({ tools: [] }),
      [READ_API_PATHS.migrations]: async () => {
        throw new Error('the database is closed');
      },
    });
    try {
      expect(api.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
      const ok = await fetch(`${api.url}/v1/tools`);
      expect([ok.status, await ok.json()]).toEqual([200, { tools: [] }]);
      const missing = await fetch(`${api.url}/v1/secrets`);
      expect(missing.status).toBe(404);
      expect(((await missing.json()) as { error: string }).error).toContain('/v1/tools');
      expect((await fetch(`${api.url}/v1/tools`, { method: 'POST', body: '{}' })).status).toBe(405);
      const failing = await fetch(`${api.url}/v1/migrations`);
      expect([failing.status, await failing.json()]).toEqual([503, { error: 'the database is closed' }]);
    } finally {
      await api.close();
    }
  });

  test('a worker identity advertises its read API; other identities advertise none', () => {
    expect(readApiOf('4242@host forge-api=http://127.0.0.1:40123')).toBe('http://127.0.0.1:40123');
    expect(readApiOf('4242@host')).toBeUndefined();
    expect(readApiOf(undefined)).toBeUndefined();
  });
});
