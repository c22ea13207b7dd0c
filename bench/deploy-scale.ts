import { statSync } from 'node:fs';
import path from 'node:path';
import { ToolRegistry } from '../src/registry';
import { materializeActiveTools } from '../src/registry/materialize';
import { startBenchPlatform, type BenchPlatform } from './platform';
import { seedActiveTools, type SeedTool } from './reverify-seed';
import { percentile, round, statsRow, timeMs } from './stats';
import type { Bench } from './types';

const RUNS = Number(process.env.BENCH_SCALE_RUNS ?? 15);
const SMALL = 10;
const LARGE = Number(process.env.BENCH_SCALE_TOOLS ?? 5_000);

const tool = (name: string, variant = 0): SeedTool => ({
  name,
  testInput: { celsius: 1 },
  source: `import { z } from 'zod';
export default {
  name: '${name}',
  description: 'Converts Celsius to Fahrenheit (variant ${variant}).',
  inputSchema: z.object({ celsius: z.number() }),
  async execute(input: { celsius: number }) { return { fahrenheit: input.celsius * 9 / 5 + 32 + ${variant} * 0 }; },
};`,
});

/** Bytes of agent-tools/'s index files (active.json and, where there is one, its log). */
function indexBytes(dir: string): string {
  return ['active.json', 'active.log']
    .map((f) => {
      try {
        return `${f} ${round(statSync(path.join(dir, f)).size / 1024, 1)} KB`;
      } catch {
        return undefined;
      }
    })
    .filter(Boolean)
    .join(', ');
}

interface Side {
  label: string;
  platform: BenchPlatform;
  registry: ToolRegistry;
  deploys: number[];
  seen: number[];
  calls: number[];
  stages: Map<string, number[]>;
}

/**
 * Issue 28: the same deployment (client → active, through Temporal) and the same registry call, on two platforms side
 * by side in this process, one with 10 active tools and one with 5,000, their deployments interleaved (A B B A ...) so
 * that the noise of a shared machine falls on both alike. The other tools are stored and activated as a deployment's
 * commit does (bench/reverify-seed.ts) and their files materialised once, since deploying 5,000 tools through the
 * workflow would take an hour here; what is measured is a real deployment and a real call of the agent's ToolRegistry
 * (directory mode, the platform's agent-tools/). Prints where a deployment's time goes (its stages) on each side, and
 * how long until the registry has each new version.
 */
export const deployScaleBench: Bench = {
  name: 'deploy-scale',
  description: `deployment and registry call with ${SMALL} and with ${LARGE} active tools, interleaved (${RUNS} deployments each)`,
  async run() {
    const sides: Side[] = [];
    try {
      for (const [label, count] of [
        [`${SMALL} tools`, SMALL],
        [`${LARGE} tools`, LARGE],
      ] as const) {
        const platform = await startBenchPlatform(`scale-${count}`);
        const dir = platform.config.agentToolsDir;
        const seedStart = performance.now();
        await seedActiveTools(
          platform.workers.store,
          Array.from({ length: count - 1 }, (_, i) => tool(`seeded_${String(i).padStart(5, '0')}`)),
        );
        const seedMs = performance.now() - seedStart;
        const matStart = performance.now();
        await materializeActiveTools(platform.workers.store, dir);
        console.log(`${label}: seeded in ${round(seedMs / 1000, 1)} s, agent-tools/ materialised in ${round((performance.now() - matStart) / 1000, 1)} s`);
        const registry = await ToolRegistry.open({ dir, limits: platform.config.sandbox.limits, onReloadError: () => undefined });
        sides.push({ label, platform, registry, deploys: [], seen: [], calls: [], stages: new Map() });
      }
      // The workers' republishing after the seeding's notifications settles before the measurement.
      await new Promise((r) => setTimeout(r, 3_000));

      let variant = 0;
      const once = async (side: Side, record: boolean) => {
        const t = tool('scale_tool', ++variant);
        const started = performance.now();
        const r = await side.platform.forge.deployTool(t);
        const deployMs = performance.now() - started;
        if (r.status !== 'active' || r.version === undefined) throw new Error(`deployment at ${side.label}: ${r.diagnostics.message}`);
        // The agent's registry sees the new version: its reload after the deployment's publish.
        await side.registry.waitFor('scale_tool', r.version, 30_000);
        const seenMs = performance.now() - started;
        const callMs = await timeMs(async () => {
          const c = await side.registry.invoke('scale_tool', { celsius: 1 });
          if (!c.ok) throw new Error(`registry call at ${side.label}: ${c.status} ${c.error}`);
        });
        if (!record) return;
        side.deploys.push(deployMs);
        side.seen.push(seenMs);
        side.calls.push(callMs);
        for (const s of r.diagnostics.stages) {
          if (s.durationMs !== undefined) side.stages.set(s.name, [...(side.stages.get(s.name) ?? []), s.durationMs]);
        }
      };
      for (let i = 0; i < 3; i++) for (const side of sides) await once(side, false);
      for (let i = 0; i < RUNS; i++) for (const side of i % 2 === 0 ? sides : [...sides].reverse()) await once(side, true);

      for (const side of sides) {
        console.log(`-- ${side.label}: ${side.registry.list().length} tools in the registry; ${indexBytes(side.platform.config.agentToolsDir)}`);
        console.log(statsRow('  deployment (client → active)', side.deploys, 34));
        console.log(statsRow('  … until the registry has it', side.seen, 34));
        console.log(statsRow('  registry call', side.calls, 34));
        for (const [name, ms] of side.stages) console.log(statsRow(`    stage ${name}`, ms, 34));
      }
      const [small, large] = sides;
      const p50 = (s: number[]) => percentile(s, 50);
      const deployRatio = round(p50(large.deploys) / p50(small.deploys));
      const callRatio = round(p50(large.calls) / p50(small.calls));
      const seenRatio = round(p50(large.seen) / p50(small.seen));
      console.log(`deployment p50 at ${LARGE} / at ${SMALL} tools: ${deployRatio}  (goal ≤ 1.1)`);
      console.log(`registry call p50 at ${LARGE} / at ${SMALL} tools: ${callRatio}  (goal ≤ 1.1)`);
      console.log(`deployment until the registry has it, p50 at ${LARGE} / at ${SMALL}: ${seenRatio}`);
      const stageRatios = [...small.stages.keys()]
        .filter((s) => large.stages.has(s))
        .map((s) => `${s} ${round(p50(small.stages.get(s)!), 1)} → ${round(p50(large.stages.get(s)!), 1)} ms`);
      console.log(`  stages (p50, ${SMALL} → ${LARGE} tools): ${stageRatios.join(', ')}`);
      return {
        deploy_p50_at_5000_tools_vs_at_10: deployRatio,
        registry_call_p50_at_5000_tools_vs_at_10: callRatio,
        deploy_until_registry_p50_at_5000_tools_vs_at_10: seenRatio,
        deploy_p50_at_10_tools_ms: round(p50(small.deploys), 1),
        deploy_p50_at_5000_tools_ms: round(p50(large.deploys), 1),
        registry_call_p50_at_10_tools_ms: round(p50(small.calls), 1),
        registry_call_p50_at_5000_tools_ms: round(p50(large.calls), 1),
        deploy_publish_p50_at_10_tools_ms: round(p50(small.stages.get('notify') ?? [NaN]), 1),
        deploy_publish_p50_at_5000_tools_ms: round(p50(large.stages.get('notify') ?? [NaN]), 1),
      };
    } finally {
      for (const side of sides) {
        await side.registry.close();
        await side.platform.stop();
      }
    }
  },
};
