import { toolContentHash } from '../src/contract/hashes';
import type { ToolStore } from '../src/db';
import { compileTool } from '../src/sandbox';

/** A tool to seed: its name, TypeScript source and stored test input. */
export interface SeedTool {
  name: string;
  source: string;
  testInput: unknown;
}

/** The benches' zod tool (Celsius to Fahrenheit), as a tool to seed under `name`. */
export const celsiusTool = (name: string): SeedTool => ({
  name,
  testInput: { celsius: 1 },
  source: `import { z } from 'zod';
export default {
  name: '${name}',
  description: 'Converts Celsius to Fahrenheit.',
  inputSchema: z.object({ celsius: z.number() }),
  async execute(input: { celsius: number }) { return { fahrenheit: input.celsius * 9 / 5 + 32 }; },
};`,
});

/**
 * Stores and activates tools the way a deployment's commit step does (one `commitVersion` each: the version row, the
 * active pointer, its events), without running a deployment per tool. Re-verification of hundreds of tools is what
 * the benchmark and the scale test measure; deploying them first through the workflow would take minutes on two
 * cores and measure nothing of it. Each source is compiled as a deployment would, so the stored row is what a
 * deployment stores.
 */
export async function seedActiveTools(store: ToolStore, tools: SeedTool[], inFlight = 8): Promise<void> {
  const queue = [...tools];
  const lane = async () => {
    for (let t = queue.shift(); t; t = queue.shift()) {
      const compiled = await compileTool(t.source, t.name);
      if (!compiled.ok) throw new Error(`seed: ${t.name} does not compile: ${compiled.errors.map((e) => e.message).join('; ')}`);
      await store.commitVersion(
        {
          name: t.name,
          contentHash: toolContentHash({ name: t.name, source: t.source, testInput: t.testInput }),
          sourceTs: t.source,
          compiledJs: compiled.code,
          testInput: t.testInput,
          verdict: { status: 'passed', seeded: true },
        },
        { workflowId: 'seed' },
      );
    }
  };
  await Promise.all(Array.from({ length: inFlight }, lane));
}
