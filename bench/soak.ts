import { setTimeout as sleep } from 'node:timers/promises';
import { ToolRegistry } from '../src/registry';
import { startPlatformProcess } from './platform';
import { round, rssMib } from './stats';
import type { Bench } from './types';

const DEPLOYS = Number(process.env.BENCH_SOAK_DEPLOYS ?? 2000);
const WARM = 100;
/** Distinct tools the deployments cycle through: each is redeployed DEPLOYS / TOOLS times with new content. */
const TOOLS = 200;
/** Deployments in flight at once, and calls after each wave: a steady agent, not a burst. */
const WAVE = 10;
/** How long the platform idles before its memory is read, so that both readings see a settled heap. */
const SETTLE_MS = Number(process.env.BENCH_SOAK_SETTLE_MS ?? 15_000);

const soakTool = (name: string, variant: number) => `import { z } from 'zod';
export default {
  name: '${name}',
  description: 'Adds a constant (variant ${variant}).',
  inputSchema: z.object({ n: z.number() }),
  async execute(input: { n: number }) { return { n: input.n + ${variant} }; },
};`;

/**
 * Issue 28's soak: `forge up`'s resident memory after 2,000 deployments and 2,000 calls minus after the first 100 of
 * each. The deployments go in waves of ten over 200 tools (every tool gets ten versions), each wave followed by ten
 * calls through a registry in this process, as an agent holds one; both readings are taken after the platform has
 * idled SETTLE_MS. Whatever a deployment leaves behind in the worker (histories, caches, sandbox spares, listeners)
 * and never gives back shows up as growth.
 */
export const soakBench: Bench = {
  name: 'soak',
  description: `forge up's memory growth over ${DEPLOYS} deployments and ${DEPLOYS} calls (after the first ${WARM})`,
  async run() {
    const platform = await startPlatformProcess('soak');
    const registry = await ToolRegistry.open({ dir: platform.config.agentToolsDir, limits: platform.config.sandbox.limits, onReloadError: () => undefined });
    let deployed = 0;
    let called = 0;
    const wave = async () => {
      const results = await Promise.all(
        Array.from({ length: WAVE }, (_, i) => {
          const n = deployed + i;
          const name = `soak_${String(n % TOOLS).padStart(3, '0')}`;
          return platform.forge.deployTool({ name, source: soakTool(name, n), testInput: { n: 1 } });
        }),
      );
      const failed = results.filter((r) => r.status !== 'active');
      if (failed.length > 0) throw new Error(`deployment ${failed[0].name} ended ${failed[0].status}: ${JSON.stringify(failed[0].diagnostics)}`);
      deployed += WAVE;
      for (const r of results) {
        await registry.waitFor(r.name, r.version!, 30_000);
        const call = await registry.invoke(r.name, { n: 1 });
        if (!call.ok) throw new Error(`call of ${r.name}: ${call.status} ${call.error}`);
        called++;
      }
    };
    const settled = async () => {
      await sleep(SETTLE_MS);
      return { worker: rssMib(platform.pid), agent: round(process.memoryUsage().rss / 2 ** 20, 0) };
    };
    try {
      const started = performance.now();
      while (deployed < WARM) await wave();
      const after100 = await settled();
      console.log(
        `after ${deployed} deployments and ${called} calls: forge up ${after100.worker} MiB, the agent's process (its registry) ${after100.agent} MiB`,
      );
      while (deployed < DEPLOYS) {
        await wave();
        if (deployed % 500 === 0)
          console.log(`  ${deployed} deployments, forge up ${rssMib(platform.pid)} MiB (${round((performance.now() - started) / 1000, 0)} s)`);
      }
      const afterAll = await settled();
      const growth = afterAll.worker - after100.worker;
      console.log(`after ${deployed} deployments and ${called} calls: forge up ${afterAll.worker} MiB, the agent's process ${afterAll.agent} MiB`);
      console.log(`forge up grew ${growth} MiB from the first ${WARM}  (goal ≤ 64); the agent's process ${afterAll.agent - after100.agent} MiB`);
      return {
        worker_rss_growth_2000_deploys_mb: growth,
        worker_rss_after_100_deploys_mib: after100.worker,
        worker_rss_after_2000_deploys_mib: afterAll.worker,
        registry_rss_growth_2000_calls_mb: afterAll.agent - after100.agent,
        soak_wall_s: round((performance.now() - started) / 1000, 0),
      };
    } finally {
      await registry.close();
      await platform.stop();
    }
  },
};
