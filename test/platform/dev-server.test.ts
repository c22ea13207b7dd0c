import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { FORGE_SEARCH_ATTRIBUTES } from '../../src/contract/search-attributes';
import { processGroupAlive, startDevServer, type DevServer } from '../../src/platform/dev-server';
import { DevServerError } from '../../src/platform/errors';
import { PlatformUnreachableError } from '../../src/contract/errors';
import { findFreePort } from '../../src/process/free-port';
import { findTemporalBinary } from '../../src/platform/temporal-binary';
import { connectClient } from '../../src/platform/temporal-connection';

// The binary is installed by `npm run setup` (part of `npm test`); without it this suite cannot mean anything.
const binary = findTemporalBinary();
if (!binary) throw new Error('No temporal CLI found: run `npm run setup` first.');

jest.setTimeout(120_000);

async function ports(): Promise<{ port: number; uiPort: number }> {
  const port = await findFreePort();
  let uiPort = await findFreePort();
  while (uiPort === port) uiPort = await findFreePort();
  return { port, uiPort };
}

describe('Temporal dev server', () => {
  let home: string;
  const started: DevServer[] = [];

  beforeEach(() => {
    home = mkdtempSync(path.join(tmpdir(), 'forge-dev-server-'));
  });

  afterEach(async () => {
    await Promise.all(started.splice(0).map((s) => s.stop()));
    rmSync(home, { recursive: true, force: true });
  });

  test('starts on free ports, answers a client with Forge search attributes, and stops without leftovers', async () => {
    const server = await startDevServer({ home, ...(await ports()), binary });
    started.push(server);
    expect(server.address).toMatch(/^127\.0\.0\.1:\d+$/);
    expect(server.uiUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(existsSync(path.join(home, 'temporal.sqlite'))).toBe(true);

    const client = await connectClient({ address: server.address });
    try {
      const { customAttributes } = await client.connection.operatorService.listSearchAttributes({
        namespace: 'default',
      });
      const registered = Object.keys(customAttributes ?? {});
      for (const name of Object.keys(FORGE_SEARCH_ATTRIBUTES)) expect(registered).toContain(name);
      const ui = await fetch(server.uiUrl);
      expect(ui.status).toBe(200);
    } finally {
      await client.connection.close();
    }

    await server.stop();
    expect(processGroupAlive(server.pid)).toBe(false);
    await server.stop(); // idempotent
    await expect(connectClient({ address: server.address, connectTimeoutMs: 1_000 })).rejects.toBeInstanceOf(PlatformUnreachableError);
  });

  test('a restart on the same FORGE_HOME keeps workflow executions', async () => {
    const p = await ports();
    const first = await startDevServer({ home, ...p, binary });
    started.push(first);
    const workflowId = `restart-check-${Date.now()}`;
    let client = await connectClient({ address: first.address });
    // No worker polls this queue: the execution just sits there, which is all this test needs.
    await client.workflow.start('NoSuchWorkflow', { taskQueue: 'nobody-polls', workflowId, args: [] });
    await client.connection.close();
    await first.stop();
    started.pop();

    const second = await startDevServer({ home, ...p, binary });
    started.push(second);
    client = await connectClient({ address: second.address });
    try {
      const description = await client.workflow.getHandle(workflowId).describe();
      expect(description.workflowId).toBe(workflowId);
      expect(description.type).toBe('NoSuchWorkflow');
      expect(description.status.name).toBe('RUNNING');
    } finally {
      await client.connection.close();
    }
  });

  test('a port that is taken fails with a clear error instead of attaching to the other server', async () => {
    const p = await ports();
    const first = await startDevServer({ home, ...p, binary });
    started.push(first);
    const otherHome = mkdtempSync(path.join(tmpdir(), 'forge-dev-server-'));
    try {
      const clash = startDevServer({ home: otherHome, port: p.port, uiPort: await findFreePort(), binary });
      await expect(clash).rejects.toBeInstanceOf(DevServerError);
      await expect(clash).rejects.toThrow(/already in use/);
    } finally {
      rmSync(otherHome, { recursive: true, force: true });
    }
  });

  test('a start-up that dies on a collision of its own internal ports is retried, and the retry serves', async () => {
    // A stand-in for the CLI that loses the internal port race on its first start (as the real one does when its
    // worker service's pick is taken) and runs the real server afterwards.
    const attempts = path.join(home, 'attempts');
    const flaky = path.join(home, 'flaky-temporal');
    writeFileSync(
      flaky,
      `#!/bin/sh\necho x >> '${attempts}'\nif [ "$(wc -l < '${attempts}')" -eq 1 ]; then\n` +
        `  echo 'level=ERROR msg="Failed to start gRPC listener" error="listen tcp 127.0.0.1:1: bind: address already in use"' >&2\n` +
        `  exit 1\nfi\nexec '${binary}' "$@"\n`,
      { mode: 0o755 },
    );
    const server = await startDevServer({ home, ...(await ports()), binary: flaky });
    started.push(server);
    expect(readFileSync(attempts, 'utf8').trim().split('\n')).toHaveLength(2);
    const client = await connectClient({ address: server.address });
    await client.connection.close();
  });

  test('a server that exits during start-up is a DevServerError that says so', async () => {
    const attempt = startDevServer({ home, ...(await ports()), binary: '/bin/false' });
    await expect(attempt).rejects.toBeInstanceOf(DevServerError);
    await expect(attempt).rejects.toThrow(/exited during start-up/);
  });
});
