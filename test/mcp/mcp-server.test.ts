import { spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ToolListChangedNotificationSchema, type CallToolResult, type Progress } from '@modelcontextprotocol/sdk/types.js';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { seedAgentRepo } from '../../src/platform/agent-repo';
import { findFreePort } from '../../src/process/free-port';
import { startTemporal, startTestPlatform, type TestPlatform } from '../helpers/platform';
import { adderTool } from '../helpers/tools';
import { cliEnv, FORGE_BIN, ROOT, runCommand } from '../cli/run-cli';
import { projectNodeModules } from '../../src/sandbox/paths';

/*
 * `forge mcp` as an MCP client meets it: the real binary (npm run build first), started over stdio by the SDK's own
 * client and over Streamable HTTP, against a real platform. What a client checks: the operations with their schemas and
 * annotations, structured results, an agent's new tool announced by notifications/tools/list_changed, listed with its
 * input schema and callable, and gone back to the older version after a rollback.
 */

let temporal: TestWorkflowEnvironment;
let platform: TestPlatform;
const TOKEN = 'forge-test-token-0123456789abcdef';

beforeAll(async () => {
  temporal = await startTemporal();
  platform = await startTestPlatform(temporal, 'pglite');
}, 120_000);

afterAll(async () => {
  // The workers first: the dev server's connection cannot close while they hold it.
  await platform?.teardown();
  await temporal?.teardown();
});

const OPERATION_NAMES = [
  'deploy_tool',
  'rollback_tool',
  'delete_tool',
  'list_tools',
  'call_tool',
  'lint_sql',
  'migrate_schema',
  'list_migrations',
  'list_runs',
  'get_run',
  'promote_builtin',
  'reverify',
  'pay',
  'sell_tool',
  'list_services',
  'get_pnl',
];

/** Counts notifications/tools/list_changed; `next()` resolves at the first one after the call. */
function watchListChanged(client: Client) {
  let waiters: (() => void)[] = [];
  let count = 0;
  client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
    count++;
    const ready = waiters;
    waiters = [];
    for (const resolve of ready) resolve();
  });
  return {
    next: () => new Promise<void>((resolve) => waiters.push(resolve)),
    get count() {
      return count;
    },
  };
}

/**
 * Calls an operation with a progress token and returns the progress messages the server sent for it. The SDK's client
 * drops a notification that arrives in the same read as the response (it dispatches notifications a microtask late,
 * after the response retired the token) and reports it to `onerror` as "a progress notification for an unknown token":
 * modelcontextprotocol/typescript-sdk#2580, "a race servers cannot avoid". Those count too: the server sent them in
 * order, before its result (a fast migration's only notifications can all arrive that way; CI saw none reach onprogress).
 */
async function callWithProgress(
  client: Client,
  params: { name: string; arguments: Record<string, unknown> },
  timeout: number,
): Promise<{ result: CallToolResult; progress: string[] }> {
  const progress: string[] = [];
  const previous = client.onerror;
  client.onerror = (error) => {
    const late = /progress notification for an unknown token: (\{.*\})$/s.exec(error.message);
    if (late) progress.push((JSON.parse(late[1]) as { params: Progress }).params.message ?? '');
    else previous?.(error);
  };
  try {
    const result = (await client.callTool(params, undefined, { onprogress: (p) => progress.push(p.message ?? ''), timeout })) as CallToolResult;
    await new Promise((resolve) => setImmediate(resolve)); // the late ones are dispatched just after the response
    return { result, progress };
  } finally {
    client.onerror = previous;
  }
}

function structured(result: unknown): Record<string, unknown> {
  const r = result as CallToolResult;
  expect(r.structuredContent).toEqual(expect.any(Object));
  return r.structuredContent as Record<string, unknown>;
}

/** deploy → list_changed → listed and callable → a second version → rollback → list_changed → the first again. */
async function deployListCallRollback(client: Client, name: string): Promise<void> {
  const changes = watchListChanged(client);

  const { tools: before } = await client.listTools();
  expect(before.map((t) => t.name)).toEqual(expect.arrayContaining(OPERATION_NAMES));
  expect(before.map((t) => t.name)).not.toContain(name);
  const deploy = before.find((t) => t.name === 'deploy_tool')!;
  expect(deploy.inputSchema).toMatchObject({ type: 'object', required: expect.arrayContaining(['name', 'source']) });
  expect(deploy.outputSchema).toMatchObject({ type: 'object', required: expect.arrayContaining(['status', 'stage', 'message']) });
  expect(deploy.annotations).toMatchObject({ readOnlyHint: false, destructiveHint: false, idempotentHint: true });
  expect(before.find((t) => t.name === 'list_runs')!.annotations).toMatchObject({ readOnlyHint: true });
  expect(before.find((t) => t.name === 'delete_tool')!.annotations).toMatchObject({ destructiveHint: true });

  // A deployment with a progress token: its stages come back as progress notifications. This one is a single
  // workflow task (its test runs in it), whose progress is answered at its end, so the last notification has them all.
  const announced = changes.next();
  const { result: first, progress } = await callWithProgress(
    client,
    { name: 'deploy_tool', arguments: { name, source: adderTool('one', name), testInput: { a: 1, b: 2 } } },
    120_000,
  );
  expect(first.isError).toBeFalsy();
  expect(structured(first)).toMatchObject({ status: 'active', name, version: 1, verdict: 'passed', stage: expect.any(String) });
  // One name for a run's steps in every result (issue 29); the old name stays beside it.
  const deployed = structured(first) as { steps: { name: string }[]; diagnostics: { stages: unknown[] } };
  expect(deployed.steps.map((s) => s.name)).toEqual(['validate', 'compile', 'typecheck', 'test', 'commit', 'notify']);
  expect(deployed.diagnostics.stages).toEqual(deployed.steps);
  expect(progress.length).toBeGreaterThan(0);
  expect(progress.at(-1)).toMatch(/\[6\/6 steps done\]/);
  await announced;

  const { tools: after } = await client.listTools();
  const listed = after.find((t) => t.name === name);
  expect(listed).toMatchObject({ description: 'Adds two numbers (one).' });
  expect(listed!.inputSchema).toMatchObject({ type: 'object', properties: { a: { type: 'number' }, b: { type: 'number' } } });

  const sum = await client.callTool({ name, arguments: { a: 2, b: 3 } });
  expect(sum.isError).toBeFalsy();
  expect(sum.structuredContent).toEqual({ sum: 5, variant: 'one' });

  // The tool's own schema still decides: a bad input is a tool error with its verdict, not a crash.
  const bad = await client.callTool({ name, arguments: { a: 'two', b: 3 } });
  expect(bad.isError).toBe(true);
  expect(structured(bad)).toMatchObject({ ok: false, status: 'invalid' });

  const updated = changes.next();
  const second = await client.callTool({ name: 'deploy_tool', arguments: { name, source: adderTool('two', name), testInput: { a: 1, b: 2 } } }, undefined, {
    timeout: 120_000,
  });
  expect(structured(second)).toMatchObject({ status: 'active', version: 2, previousVersion: 1 });
  await updated;
  expect((await client.callTool({ name, arguments: { a: 1, b: 1 } })).structuredContent).toEqual({ sum: 2, variant: 'two' });

  const rolledBack = changes.next();
  const rollback = await client.callTool({ name: 'rollback_tool', arguments: { name } }, undefined, { timeout: 120_000 });
  expect(rollback.isError).toBeFalsy();
  expect(structured(rollback)).toMatchObject({ status: 'active', name, version: 1, previousVersion: 2, workflowId: expect.any(String) });
  await rolledBack;
  expect((await client.listTools()).tools.find((t) => t.name === name)).toMatchObject({ description: 'Adds two numbers (one).' });
  expect((await client.callTool({ name, arguments: { a: 1, b: 1 } })).structuredContent).toEqual({ sum: 2, variant: 'one' });
  expect(changes.count).toBeGreaterThanOrEqual(3);
}

describe('forge mcp over stdio', () => {
  let client: Client;

  beforeAll(async () => {
    client = new Client({ name: 'forge-test', version: '0.0.0' });
    await client.connect(
      new StdioClientTransport({
        command: process.execPath,
        args: [FORGE_BIN, 'mcp'],
        env: cliEnv(platform.childEnv) as Record<string, string>,
        cwd: ROOT,
        stderr: 'inherit',
      }),
    );
  }, 60_000);

  afterAll(async () => {
    await client?.close();
  });

  test('initialize: the server says it is forge and that its tool list changes', () => {
    expect(client.getServerVersion()).toMatchObject({ name: 'forge' });
    expect(client.getServerCapabilities()).toMatchObject({ tools: { listChanged: true } });
  });

  test('deploy_tool → list_changed → the new tool is listed and callable → rollback_tool → list_changed', async () => {
    await deployListCallRollback(client, 'adder_stdio');
  }, 300_000);

  test('a type error: isError at stage typecheck, with the location and the TS code an agent acts on', async () => {
    const source = "export default {\n  name: 'mistyped',\n  async execute() { const n: number = 'one'; return { n }; },\n};\n";
    const result = await client.callTool({ name: 'deploy_tool', arguments: { name: 'mistyped', source } }, undefined, { timeout: 120_000 });
    expect(result.isError).toBe(true);
    expect(structured(result)).toMatchObject({
      status: 'rejected',
      stage: 'typecheck',
      verdict: 'failed',
      location: { file: 'mistyped.ts', line: 3, column: 27 },
      diagnostics: { typeErrors: [expect.objectContaining({ code: 'TS2322' })] },
    });
  }, 180_000);

  test('a rejected deployment: isError, with the stage, verdict, message and location an agent acts on', async () => {
    const result = await client.callTool(
      { name: 'deploy_tool', arguments: { name: 'broken', source: 'export default {\n  name: "broken",\n  oops oops\n};\n' } },
      undefined,
      { timeout: 120_000 },
    );
    expect(result.isError).toBe(true);
    expect(structured(result)).toMatchObject({ status: 'rejected', name: 'broken', stage: 'compile', message: expect.any(String), location: { line: 3 } });
    expect((await client.listTools()).tools.map((t) => t.name)).not.toContain('broken');
  }, 180_000);

  test('lint_sql judges SQL as forge lint-sql does; list_runs and get_run show the runs', async () => {
    const lint = await client.callTool({ name: 'lint_sql', arguments: { sql: 'DROP TABLE users;' } });
    expect(lint.isError).toBe(true);
    expect(structured(lint)).toMatchObject({
      accepted: false,
      statements: [expect.objectContaining({ accepted: false, location: expect.objectContaining({ line: 1 }) })],
    });

    const runs = structured(await client.callTool({ name: 'list_runs', arguments: { kind: 'deploy' } })).runs as { workflowId: string; outcome: string }[];
    expect(runs.length).toBeGreaterThan(0);
    const run = structured(await client.callTool({ name: 'get_run', arguments: { workflowId: runs[0].workflowId } }));
    expect(run).toMatchObject({ workflowId: runs[0].workflowId, kind: 'deploy' });

    const invalid = await client.callTool({ name: 'list_runs', arguments: { kind: 'nonsense' } });
    expect(invalid.isError).toBe(true);
    expect(JSON.stringify(invalid.content)).toMatch(/kind/);
  }, 120_000);

  test('migrate_schema applies once (again: alreadyApplied), list_migrations lists it; a refused one says where', async () => {
    const sql = 'CREATE TABLE agent_mcp_notes (id bigint PRIMARY KEY, body text);';
    const { result: applied, progress } = await callWithProgress(client, { name: 'migrate_schema', arguments: { name: '0001_mcp_notes', sql } }, 120_000);
    expect(applied.isError).toBeFalsy();
    expect(structured(applied)).toMatchObject({ status: 'applied', name: '0001_mcp_notes', workflowId: 'schema-migrate/0001_mcp_notes' });
    expect((structured(applied) as { steps: { name: string }[] }).steps.map((s) => s.name)).toEqual(['validate', 'apply', 'build', 'record']);
    expect(structured(applied).stages).toEqual(structured(applied).steps);
    expect(progress.length).toBeGreaterThan(0);
    const again = await client.callTool({ name: 'migrate_schema', arguments: { name: '0001_mcp_notes', sql } }, undefined, { timeout: 120_000 });
    expect(structured(again)).toMatchObject({ status: 'alreadyApplied' });
    const listed = structured(await client.callTool({ name: 'list_migrations', arguments: {} })).migrations as { name: string }[];
    expect(listed.map((m) => m.name)).toContain('0001_mcp_notes');

    const refused = await client.callTool(
      { name: 'migrate_schema', arguments: { name: '0002_mcp_drop', sql: 'CREATE TABLE agent_ok (id int);\nDROP TABLE agent_mcp_notes;' } },
      undefined,
      { timeout: 120_000 },
    );
    expect(refused.isError).toBe(true);
    expect(structured(refused)).toMatchObject({ status: 'rejected', message: expect.any(String), location: { line: 2 } });
  }, 300_000);

  test('the x402 operations answer in structured content: get_pnl before any payment, sell_tool refused (this platform sells nothing) saying why', async () => {
    expect(structured(await client.callTool({ name: 'get_pnl', arguments: {} }))).toMatchObject({
      by: 'tool',
      rows: [],
      totals: { income: '0', spend: '0', net: '0' },
    });
    const sell = await client.callTool({ name: 'sell_tool', arguments: { tool: 'adder_stdio', price: '1000' } }, undefined, { timeout: 120_000 });
    expect(sell.isError).toBe(true);
    expect(structured(sell)).toMatchObject({ status: 'refused', reason: expect.stringContaining('does not sell') });
  }, 120_000);

  test('delete_tool removes the tool from the list, with list_changed', async () => {
    const changes = watchListChanged(client);
    const gone = changes.next();
    const deleted = await client.callTool({ name: 'delete_tool', arguments: { name: 'adder_stdio' } }, undefined, { timeout: 120_000 });
    expect(structured(deleted)).toMatchObject({ status: 'deleted', name: 'adder_stdio' });
    await gone;
    expect((await client.listTools()).tools.map((t) => t.name)).not.toContain('adder_stdio');
  }, 180_000);

  test('reverify now quarantines a tool whose package broke: the summary says so, list_changed, and the tool is gone', async () => {
    // A package the tool imports, readable by the sandbox's own user; then it changes under the deployed tool.
    const dir = mkdtempSync(path.join(projectNodeModules(), '.forge-mcp-pkg-')); // a run reads the installed packages, nothing else of the host's
    chmodSync(dir, 0o755);
    const lib = path.join(dir, 'lib.mjs');
    writeFileSync(lib, 'export function scale(n) { return n * 2; }\n', { mode: 0o644 });
    try {
      const source = `import { scale } from ${JSON.stringify(lib)};
import { z } from 'zod';
export default {
  name: 'rots_mcp',
  description: 'Scales n by a package that is about to break.',
  inputSchema: z.object({ n: z.number() }),
  async execute({ n }: { n: number }) { return { value: scale(n) }; },
};
`;
      const deployed = await client.callTool({ name: 'deploy_tool', arguments: { name: 'rots_mcp', source, testInput: { n: 3 } } }, undefined, {
        timeout: 120_000,
      });
      expect(structured(deployed)).toMatchObject({ status: 'active', version: 1 });
      writeFileSync(lib, 'export function multiply(n, by = 2) { return n * by; }\n');

      const changes = watchListChanged(client);
      const quarantined = changes.next();
      const run = await client.callTool({ name: 'reverify', arguments: { action: 'now' } }, undefined, { timeout: 300_000 });
      expect(run.isError).toBeFalsy();
      expect(structured(run)).toMatchObject({ action: 'now', summary: { quarantined: expect.arrayContaining(['rots_mcp']) } });
      await quarantined;
      expect((await client.listTools()).tools.map((t) => t.name)).not.toContain('rots_mcp');
      const listed = structured(await client.callTool({ name: 'list_tools', arguments: {} })).tools as { name: string; status: string }[];
      expect(listed).toEqual(expect.arrayContaining([expect.objectContaining({ name: 'rots_mcp', status: 'quarantined' })]));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 360_000);
});

describe('forge mcp: promote_builtin', () => {
  let client: Client;

  beforeAll(async () => {
    // The agent repository `forge up` seeds, where this platform's promotions go by default.
    await seedAgentRepo({ target: platform.config.promotion.repo, identity: platform.config.promotion.identity });
    client = new Client({ name: 'forge-test-promote', version: '0.0.0' });
    await client.connect(
      new StdioClientTransport({
        command: process.execPath,
        args: [FORGE_BIN, 'mcp'],
        env: cliEnv(platform.childEnv) as Record<string, string>,
        cwd: ROOT,
        stderr: 'inherit',
      }),
    );
  }, 60_000);

  afterAll(async () => {
    await client?.close();
  });

  test('a change that does not compile: rejected at compile with the file and line, progress on the way, nothing merged', async () => {
    const original = readFileSync(path.join(ROOT, 'examples', 'agent-repo', 'src', 'tools', 'sum.ts'), 'utf8');
    const content = `${original.trimEnd()}\nexport const broken: number = 'not a number';\n`;
    const line = content.trimEnd().split('\n').length;
    const { result, progress } = await callWithProgress(
      client,
      { name: 'promote_builtin', arguments: { changes: [{ path: 'src/tools/sum.ts', content }], dryRun: true } },
      300_000,
    );
    expect(result.isError).toBe(true);
    expect(structured(result)).toMatchObject({
      status: 'rejected',
      stage: 'compile',
      category: 'compile',
      location: { file: expect.stringContaining('src/tools/sum.ts'), line },
      workflowId: expect.stringMatching(/^builtin-promote\//),
    });
    expect(structured(result).mergedCommit).toBeUndefined();
    expect(progress.join('\n')).toMatch(/compile/);
  }, 360_000);
});

describe('forge mcp with the platform out of reach', () => {
  test('an operation answers a tool error saying the platform cannot be reached; the server stays up', async () => {
    const client = new Client({ name: 'forge-test-offline', version: '0.0.0' });
    const env = cliEnv({ ...platform.childEnv, TEMPORAL_ADDRESS: `127.0.0.1:${await findFreePort()}` });
    await client.connect(
      new StdioClientTransport({ command: process.execPath, args: [FORGE_BIN, 'mcp'], env: env as Record<string, string>, cwd: ROOT, stderr: 'ignore' }),
    );
    try {
      const result = await client.callTool({ name: 'list_tools', arguments: {} }, undefined, { timeout: 60_000 });
      expect(result.isError).toBe(true);
      expect(JSON.stringify(result.content)).toMatch(/reach|unreachable/i);
      // Work that needs no Temporal still answers.
      expect(structured(await client.callTool({ name: 'lint_sql', arguments: { sql: 'CREATE TABLE agent_notes (id int);' } }))).toMatchObject({
        accepted: true,
      });
    } finally {
      await client.close();
    }
  }, 90_000);
});

/** Starts `forge mcp --http --port 0` and resolves with its URL once it says where it listens. */
function startHttpServer(env: NodeJS.ProcessEnv): Promise<{ child: ChildProcess; url: string }> {
  const child = spawn(process.execPath, [FORGE_BIN, 'mcp', '--http', '--port', '0'], { env, cwd: ROOT, stdio: ['ignore', 'inherit', 'pipe'] });
  return new Promise((resolve, reject) => {
    let stderr = '';
    child.stderr!.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
      const match = /Streamable HTTP at (http:\/\/\S+)/.exec(stderr);
      if (match) resolve({ child, url: match[1] });
    });
    child.once('exit', (code) => reject(new Error(`forge mcp --http exited (${code}) before listening:\n${stderr}`)));
  });
}

describe('forge mcp --http', () => {
  let server: { child: ChildProcess; url: string };
  let client: Client;

  beforeAll(async () => {
    server = await startHttpServer(cliEnv({ ...platform.childEnv, FORGE_MCP_TOKEN: TOKEN }));
    client = new Client({ name: 'forge-test-http', version: '0.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(server.url), { requestInit: { headers: { Authorization: `Bearer ${TOKEN}` } } }));
  }, 60_000);

  afterAll(async () => {
    await client?.close();
    if (server && server.child.exitCode === null) {
      const exited = new Promise((resolve) => server.child.once('exit', resolve));
      server.child.kill('SIGTERM');
      await exited;
    }
  });

  test('listens on loopback only, by default', () => {
    expect(new URL(server.url).hostname).toBe('127.0.0.1');
  });

  test('without the bearer token, or with another, a request is refused with 401', async () => {
    const initialize = JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'curl', version: '0' } },
    });
    const headers = { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' };
    const none = await fetch(server.url, { method: 'POST', headers, body: initialize });
    expect(none.status).toBe(401);
    expect(none.headers.get('www-authenticate')).toMatch(/^Bearer/);
    const wrong = await fetch(server.url, { method: 'POST', headers: { ...headers, Authorization: 'Bearer not-the-token-at-all' }, body: initialize });
    expect(wrong.status).toBe(401);
    const right = await fetch(server.url, { method: 'POST', headers: { ...headers, Authorization: `Bearer ${TOKEN}` }, body: initialize });
    expect(right.status).toBe(200);
    await right.body?.cancel();
  });

  test('a request naming another Host (DNS rebinding from a web page) is refused with 403, even with the token', async () => {
    const { port } = new URL(server.url);
    const status = await new Promise<number | undefined>((resolve, reject) => {
      const req = request(
        {
          host: '127.0.0.1',
          port,
          path: '/mcp',
          method: 'POST',
          headers: { Host: `evil.example:${port}`, Authorization: `Bearer ${TOKEN}`, 'Content-Type': 'application/json' },
        },
        (res) => {
          res.resume();
          resolve(res.statusCode);
        },
      );
      req.once('error', reject);
      req.end('{}');
    });
    expect(status).toBe(403);
  });

  test('deploy_tool → list_changed → the new tool is listed and callable → rollback_tool → list_changed', async () => {
    await deployListCallRollback(client, 'adder_http');
  }, 300_000);

  test('without FORGE_MCP_TOKEN, --http does not start (exit 2, saying what to set)', async () => {
    const child = spawn(process.execPath, [FORGE_BIN, 'mcp', '--http', '--port', '0'], { env: cliEnv(platform.childEnv), cwd: ROOT });
    let stderr = '';
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    const code = await new Promise((resolve) => child.once('exit', resolve));
    expect(code).toBe(2);
    expect(stderr).toContain('FORGE_MCP_TOKEN');
  }, 60_000);
});

/** The MCP Inspector's CLI mode, from the npm registry: a client no one here wrote. */
const INSPECTOR = '@modelcontextprotocol/inspector@2.12.0';

describe('forge mcp with the MCP Inspector as the client', () => {
  /** Runs `npx inspector --cli node bin/forge.js mcp ...args`; undefined (with the reason printed) where npx cannot fetch it. */
  async function inspect(args: string[]): Promise<Record<string, unknown> | undefined> {
    const env = cliEnv(platform.childEnv);
    // The Inspector starts the server with a minimal environment of its own: Forge's variables go with -e.
    const passed = Object.entries(platform.childEnv).flatMap(([k, v]) => ['-e', `${k}=${v}`]);
    const result = await runCommand('npx', ['-y', INSPECTOR, '--cli', ...passed, process.execPath, FORGE_BIN, 'mcp', ...args], { env, timeoutMs: 240_000 });
    if (result.code !== 0 && /ENOTFOUND|EAI_AGAIN|ECONNREFUSED|ETIMEDOUT|E404|ENETUNREACH|network|registry/i.test(result.stderr)) {
      console.log(`skipped: npx could not fetch ${INSPECTOR} here:\n${result.stderr.slice(-1000)}`);
      return undefined;
    }
    expect(result).toMatchObject({ code: 0 });
    return JSON.parse(result.stdout) as Record<string, unknown>;
  }

  test('tools/call deploy_tool, then tools/list shows the new tool and tools/call runs it', async () => {
    const deployed = await inspect([
      '--method',
      'tools/call',
      '--tool-name',
      'deploy_tool',
      '--tool-arg',
      'name=adder_inspector',
      '--tool-arg',
      `source=${adderTool('inspected', 'adder_inspector')}`,
      '--tool-arg',
      'testInput={"a":1,"b":2}',
    ]);
    if (!deployed) return;
    expect(deployed.structuredContent).toMatchObject({ status: 'active', name: 'adder_inspector', version: 1 });

    const listed = (await inspect(['--method', 'tools/list']))!;
    const tool = (listed.tools as { name: string; inputSchema: unknown }[]).find((t) => t.name === 'adder_inspector');
    expect(tool).toMatchObject({ inputSchema: { type: 'object', properties: { a: { type: 'number' } } } });

    const called = (await inspect(['--method', 'tools/call', '--tool-name', 'adder_inspector', '--tool-arg', 'a=4', '--tool-arg', 'b=5']))!;
    expect(called.structuredContent).toEqual({ sum: 9, variant: 'inspected' });
  }, 600_000);
});
