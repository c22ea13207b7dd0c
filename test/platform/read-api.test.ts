import { readFileSync, statSync } from 'node:fs';
import { temporal as proto } from '@temporalio/proto';
import { ForgeClient } from '../../src/client';
import { READ_API_PATHS, readApiOf } from '../../src/contract/read-api';
import { startReadApi, UNAUTHORIZED_ERROR } from '../../src/platform/read-api';
import { readApiTokenFileOf } from '../../src/process/read-api-token';
import { sleep } from '../chaos/end-state';
import { startTestPlatform, useTemporal, type TestPlatform } from '../helpers/platform';
import { adderTool } from '../helpers/tools';

/**
 * Reads are not runs (issue 12): `forge tools` / `forge migrations` (ForgeClient.listTools / listMigrations) are
 * answered by the worker's read API, found through the control worker's identity, and start no workflow; without a
 * read API (FORGE_API_ADDRESS=off, or a client that cannot reach it) they still answer, through a query run.
 * The read API asks who is calling (issue 24): only a request with the token of its FORGE_HOME gets an answer.
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

/** The read API the platform's control worker advertises, found as a client finds it (and as a tool on loopback could). */
async function advertisedReadApi(platform: TestPlatform): Promise<string> {
  const described = await platform.env.client.workflowService.describeTaskQueue({
    namespace: platform.env.namespace ?? 'default',
    taskQueue: { name: platform.config.taskQueues.control },
    taskQueueType: proto.api.enums.v1.TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW,
  });
  const url = (described.pollers ?? []).map((p) => readApiOf(p.identity)).find((u) => u !== undefined);
  if (!url) throw new Error('no poller of the control queue advertises a read API');
  return url;
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
    await expect(platform.forge.deployTool({ name: 'read_back', source: adderTool('a', 'read_back'), testInput: { a: 1, b: 2 } })).resolves.toMatchObject({
      status: 'active',
    });
    await expect(platform.forge.migrateSchema({ name: 'agent_read_back', sql: 'CREATE TABLE agent_read_back (id int)' })).resolves.toMatchObject({
      status: 'applied',
    });
    expect((await platform.forge.listTools()).tools).toEqual([expect.objectContaining({ name: 'read_back', activeVersion: 1, status: 'active' })]);
    expect((await platform.forge.listMigrations()).migrations).toEqual([expect.objectContaining({ name: 'agent_read_back' })]);
    expect(await queryRuns(platform)).toHaveLength(runs);
  });
});

describe('the read API of a running platform asks who is calling', () => {
  let platform: TestPlatform;
  beforeAll(async () => {
    platform = await startTestPlatform(temporal(), 'pglite', { env: { FORGE_X402_DEV: '1' } });
    await platform.forge.deployTool({ name: 'secret_keeper', source: adderTool('a', 'secret_keeper'), testInput: { a: 1, b: 2 } });
  }, 120_000);
  afterAll(() => platform?.teardown());

  test('without the token, or with a wrong one, every path gets 401 and nothing else; with it, the data', async () => {
    const url = await advertisedReadApi(platform);
    const tokenFile = readApiTokenFileOf(platform.home);
    expect(statSync(tokenFile).mode & 0o777).toBe(0o600);
    const token = readFileSync(tokenFile, 'utf8').trim();
    expect(token).toMatch(/^[A-Za-z0-9_-]{43}$/);

    const paths = [...Object.values(READ_API_PATHS), '/', '/v1/secrets', '/v1/tools?token=' + token];
    const refusals: Record<string, string>[] = [
      {},
      { authorization: 'Bearer wrong-token-of-other-length' },
      { authorization: `Bearer ${token.slice(0, -1)}${token.endsWith('A') ? 'B' : 'A'}` },
      { authorization: token },
      { authorization: `Basic ${Buffer.from(`forge:${token}`).toString('base64')}` },
      { cookie: `token=${token}` },
    ];
    for (const pathname of paths) {
      for (const headers of refusals) {
        for (const method of ['GET', 'HEAD', 'POST']) {
          const response = await fetch(`${url}${pathname}`, { method, headers, ...(method === 'POST' ? { body: '{}' } : {}) });
          const body = await response.text();
          expect({ pathname, headers, method, status: response.status }).toEqual({ pathname, headers, method, status: 401 });
          expect(response.headers.get('www-authenticate')).toBe('Bearer realm="forge"');
          if (method !== 'HEAD') expect(JSON.parse(body)).toEqual({ error: UNAUTHORIZED_ERROR });
          // Nothing of what it serves: no tool, no wallet, no chain, not even the list of paths.
          expect(body).not.toMatch(/secret_keeper|0x[0-9a-fA-F]{40}|rpc|\/v1\//i);
        }
      }
    }

    const authorized = { authorization: `Bearer ${token}` };
    const tools = await fetch(`${url}${READ_API_PATHS.tools}`, { headers: authorized });
    expect(tools.status).toBe(200);
    expect(((await tools.json()) as { tools: { name: string }[] }).tools.map((t) => t.name)).toEqual(['secret_keeper']);
    const x402 = await fetch(`${url}${READ_API_PATHS.x402}`, { headers: authorized });
    expect(x402.status).toBe(200);
    expect(await x402.json()).toMatchObject({ wallet: expect.stringMatching(/^0x/), devNetwork: { rpcUrl: expect.any(String) } });
    const unknown = await fetch(`${url}/v1/secrets`, { headers: authorized });
    expect(unknown.status).toBe(404);
  });

  test("the platform's client reads through it with the token (no run); a client that cannot read the token reads through a query run", async () => {
    const before = (await queryRuns(platform)).length;
    expect((await platform.forge.listTools()).tools.map((t) => t.name)).toEqual(['secret_keeper']);
    expect(await platform.forge.x402Info()).toMatchObject({ wallet: expect.stringMatching(/^0x/) });
    expect(await queryRuns(platform)).toHaveLength(before);

    // Another user's client, or one on another host: no token file it can read, no FORGE_API_TOKEN.
    const stranger = ForgeClient.fromClient(platform.env.client, {
      env: { ...platform.childEnv, FORGE_HOME: `${platform.home}-elsewhere` },
      taskQueue: platform.config.taskQueues.control,
    });
    expect((await stranger.listTools()).tools.map((t) => t.name)).toEqual(['secret_keeper']);
    expect(await stranger.x402Info()).toBeUndefined();
    expect(await queryRuns(platform)).toHaveLength(before + 1);
  });
});

describe('the read API itself', () => {
  const token = 'a-token-of-the-tests-own-0123456789';
  const auth = { authorization: `Bearer ${token}` };

  test('GET a known path: its JSON; another path: 404 naming the paths; another method: 405; a failing read: 503', async () => {
    const api = await startReadApi(
      '127.0.0.1:0',
      {
        [READ_API_PATHS.tools]: async () => ({ tools: [] }),
        [READ_API_PATHS.migrations]: async () => {
          throw new Error('the database is closed');
        },
      },
      { token },
    );
    try {
      expect(api.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
      const ok = await fetch(`${api.url}/v1/tools`, { headers: auth });
      expect([ok.status, await ok.json()]).toEqual([200, { tools: [] }]);
      const missing = await fetch(`${api.url}/v1/secrets`, { headers: auth });
      expect(missing.status).toBe(404);
      expect(((await missing.json()) as { error: string }).error).toContain('/v1/tools');
      expect((await fetch(`${api.url}/v1/tools`, { method: 'POST', body: '{}', headers: auth })).status).toBe(405);
      const failing = await fetch(`${api.url}/v1/migrations`, { headers: auth });
      expect([failing.status, await failing.json()]).toEqual([503, { error: 'the database is closed' }]);
      const anonymous = await fetch(`${api.url}/v1/secrets`);
      expect([anonymous.status, await anonymous.json()]).toEqual([401, { error: UNAUTHORIZED_ERROR }]);
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
