/**
 * Records one history of each released workflow shape into test/replay/histories/, for the replay test.
 * Run it (`npx tsx test/replay/record-histories.ts`) when a workflow's shape is released on purpose; a change that
 * breaks replay of these histories needs `patched()` instead.
 */
import { writeFileSync } from 'node:fs';
import { temporal } from '@temporalio/proto';
import path from 'node:path';
import { startTemporal, startTestPlatform } from '../helpers/platform';

const tool = (variant: string) => `import { z } from 'zod';
export default {
  name: 'replayed',
  inputSchema: z.object({ n: z.number() }),
  async execute({ n }: { n: number }) { return { n, variant: '${variant}' }; },
};`;

async function main(): Promise<void> {
  const env = await startTemporal();
  const platform = await startTestPlatform(env);
  const runs: Record<string, { workflowId: string; runId?: string }> = {};
  const deploy = async (input: { name: string; source: string; testInput: unknown }) => {
    const handle = await platform.forge.startDeployTool(input);
    await handle.result();
    return { workflowId: handle.workflowId, runId: handle.runId };
  };
  try {
    const { forge } = platform;
    // The same content twice is two runs under one workflow ID: their run IDs tell them apart.
    runs['deploy-active'] = await deploy({ name: 'replayed', source: tool('a'), testInput: { n: 1 } });
    runs['deploy-unchanged'] = await deploy({ name: 'replayed', source: tool('a'), testInput: { n: 1 } });
    await deploy({ name: 'replayed', source: tool('b'), testInput: { n: 1 } });
    runs['deploy-rejected'] = await deploy({ name: 'replayed', source: 'export default {', testInput: {} });
    runs['rollback'] = { workflowId: (await forge.rollbackTool('replayed')).workflowId };
    runs['delete'] = { workflowId: (await forge.deleteTool('replayed')).workflowId };
    runs['migrate'] = { workflowId: (await forge.migrateSchema({ name: 'agent_replayed', sql: 'CREATE TABLE agent_replayed (id int)' })).workflowId };
    for (const [label, { workflowId, runId }] of Object.entries(runs)) {
      const history = await env.client.workflow.getHandle(workflowId, runId).fetchHistory();
      // Binary protobuf, base64: exact, and read back without protobufjs's JSON layer (which breaks under jest).
      const bytes = temporal.api.history.v1.History.encode(history).finish();
      writeFileSync(path.join(__dirname, 'histories', `${label}.history.b64`), Buffer.from(bytes).toString('base64') + '\n');
    }
  } finally {
    await platform.teardown();
    await env.teardown();
  }
}

void main();
