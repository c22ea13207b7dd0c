import type { ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { ForgeClient, type OutageEvent } from '../../src/client';
import { startDevServer, type DevServer } from '../../src/platform/dev-server';
import { findFreePort } from '../../src/process/free-port';
import { requireTemporalBinary } from '../../src/platform/temporal-binary';
import { killWorkerHard, startForgeWorker } from './forge-worker';

/**
 * Issue 9: a 45 s dev-server outage made the CLI give up (exit 3) while the run later finished. The Temporal dev
 * server (SQLite state kept) is stopped in the middle of a deployment for longer than the SDK's own retries last,
 * then started again on the same port: the client waiting for the result says so and gets it once the server is back.
 * The worker is the real `forge worker` (dist/, built by `npm test`) in its own process.
 */
const OUTAGE_MS = 30_000;

const slowTool = `import { z } from 'zod';
export default {
  name: 'outlasting',
  description: 'Takes its time.',
  inputSchema: z.object({ ms: z.number() }),
  timeoutMs: 20_000,
  async execute({ ms }: { ms: number }) {
    await new Promise((r) => setTimeout(r, ms));
    return { waited: ms };
  },
};`;

let home: string;
let server: DevServer | undefined;
let worker: ChildProcess | undefined;
let forge: ForgeClient | undefined;

afterAll(async () => {
  await forge?.close().catch(() => undefined);
  if (worker) await killWorkerHard(worker);
  await server?.stop();
  if (home) rmSync(home, { recursive: true, force: true });
});

test('the Temporal server down for 30 s mid-deployment: the waiting client rides it out and gets the result', async () => {
  home = mkdtempSync(path.join(existsSync('/dev/shm') ? '/dev/shm' : '/tmp', 'forge-outage-'));
  const binary = requireTemporalBinary();
  const ports = { port: await findFreePort(), uiPort: await findFreePort() };
  server = await startDevServer({ home, ...ports, binary });
  const suffix = randomBytes(4).toString('hex');
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH,
    FORGE_HOME: home,
    FORGE_AGENT_TOOLS_DIR: path.join(home, 'agent-tools'),
    FORGE_TASK_QUEUE_CONTROL: `outage-control-${suffix}`,
    FORGE_TASK_QUEUE_SANDBOX: `outage-sandbox-${suffix}`,
    TEMPORAL_ADDRESS: server.address,
    TEMPORAL_NAMESPACE: server.namespace,
  };
  worker = await startForgeWorker(env);
  const outages: OutageEvent[] = [];
  forge = await ForgeClient.connect({ env, waitThroughOutageMs: 90_000, onOutage: (o) => outages.push(o) });

  // The test begins beside the type check (cold in a fresh worker: seconds), so it lasts long enough to be under way
  // still when the run shows stage `test` and the server goes down.
  const handle = await forge.startDeployTool({ name: 'outlasting', source: slowTool, testInput: { ms: 10_000 } });
  for (let i = 0; i < 400 && (await handle.progress())?.stage !== 'test'; i++) await new Promise((r) => setTimeout(r, 50));
  const result = handle.result();
  await server.stop();
  await new Promise((r) => setTimeout(r, OUTAGE_MS));
  server = await startDevServer({ home, ...ports, binary });

  await expect(result).resolves.toMatchObject({ status: 'active', name: 'outlasting', version: 1 });
  expect(outages.length).toBeGreaterThan(0);
  expect(outages.at(-1)).toMatchObject({ address: server.address, workflowId: handle.workflowId, giveUpAfterMs: 90_000 });
}, 180_000);
