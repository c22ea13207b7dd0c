import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { ToolRegistry, writeActiveIndex, writeToolVersionFiles, type ActiveEntry } from '../src/registry';
import { percentile, round, timeMs } from './stats';
import type { Bench } from './types';

const TOOLS = 1_000;
const LOADS = Number(process.env.BENCH_REGISTRY_LOADS ?? 7);

/**
 * `ToolRegistry.open` in directory mode over 1,000 active tools: read active.json and every manifest, start watching.
 * The compiled modules are read on first call, so they are not part of a load.
 */
export const registryLoad: Bench = {
  name: 'registry-load',
  description: `ToolRegistry load (directory mode) with ${TOOLS} tools, median of ${LOADS} loads`,
  async run() {
    const dir = mkdtempSync(path.join(existsSync('/dev/shm') ? '/dev/shm' : tmpdir(), 'forge-bench-registry-'));
    try {
      const tools: Record<string, ActiveEntry> = {};
      for (let i = 0; i < TOOLS; i++) {
        const name = `tool_${String(i).padStart(4, '0')}`;
        const source = [
          `import { z } from 'zod';`,
          `export default { name: '${name}', description: 'Tool ${i}.', inputSchema: z.object({ n: z.number() }),`,
          `  async execute(input: { n: number }) { return { n: input.n + ${i} }; } };`,
          '',
        ].join('\n');
        const contentHash = `${i.toString(16).padStart(8, '0')}${'0'.repeat(56)}`;
        await writeToolVersionFiles(dir, {
          manifest: { name, version: 1, contentHash, description: `Tool ${i}.`, createdAt: new Date().toISOString(), workflowId: null },
          sourceTs: source,
          // Size-alike of a compiled module with its inline source map; its content does not matter for a load.
          compiledJs: source + `//# sourceMappingURL=data:application/json;base64,${Buffer.alloc(600).toString('base64')}\n`,
        });
        tools[name] = { version: 1, contentHash };
      }
      await writeActiveIndex(dir, { generation: 1, updatedAt: new Date().toISOString(), tools });

      const samples: number[] = [];
      for (let i = 0; i < LOADS + 1; i++) {
        let registry: ToolRegistry | undefined;
        const ms = await timeMs(async () => {
          registry = await ToolRegistry.open({ dir });
        });
        if (registry?.list().length !== TOOLS) throw new Error(`registry loaded ${registry?.list().length} tools, expected ${TOOLS}`);
        await registry.close();
        if (i > 0) samples.push(ms); // the first load warms the page cache and the module graph
      }
      const p50 = round(percentile(samples, 50), 1);
      console.log(`registry load, ${TOOLS} tools: p50 ${p50} ms   max ${round(Math.max(...samples), 1)} ms`);
      return { registry_load_1000_ms: p50 };
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  },
};
