import { runSandbox } from '../src/sandbox';
import { floorRunner } from './floor';
import { p50p95, percentile, round, statsRow, timeMs } from './stats';
import type { Bench } from './types';

const RUNS = Number(process.env.BENCH_RUNS ?? 40);

const trivialTool = `export default {
  name: 'trivial',
  inputSchema: { safeParse: (input: unknown) => ({ success: true, data: input }) },
  async execute() { return { ok: true }; },
};`;

const zodTool = `import { z } from 'zod';
export default {
  name: 'zod_tool',
  inputSchema: z.object({ celsius: z.number() }),
  async execute(input: { celsius: number }) { return { fahrenheit: input.celsius * 9 / 5 + 32 }; },
};`;

/**
 * Sandbox p50/p95 of a trivial tool and of a zod tool beside the bare floor (fork a trivial module that sends one
 * message), runs interleaved so that machine noise hits all three alike.
 */
export const sandboxBench: Bench = {
  name: 'sandbox',
  description: `sandbox run vs. bare fork floor, ${RUNS} interleaved runs each`,
  async run() {
    const floor = floorRunner(`process.send({ ok: true });\n`);
    const trivial = async () => expectPassed(await runSandbox({ name: 'trivial', source: trivialTool, input: {} }));
    const zod = async () => expectPassed(await runSandbox({ name: 'zod_tool', source: zodTool, input: { celsius: 1 } }));
    // Warm-up: esbuild's service, the page cache, zod's files.
    for (let i = 0; i < 3; i++) await Promise.all([floor(), trivial(), zod()].map((p) => p.catch(() => undefined)));
    const samples = { floor: [] as number[], trivial: [] as number[], zod: [] as number[] };
    for (let i = 0; i < RUNS; i++) {
      samples.floor.push(await timeMs(floor));
      samples.trivial.push(await timeMs(trivial));
      samples.zod.push(await timeMs(zod));
    }
    console.log(statsRow('bare fork floor', samples.floor));
    console.log(statsRow('sandbox, trivial tool', samples.trivial));
    console.log(statsRow('sandbox, zod tool', samples.zod));
    const trivialRatio = round(percentile(samples.trivial, 50) / percentile(samples.floor, 50));
    const zodRatio = round(percentile(samples.zod, 50) / percentile(samples.floor, 50));
    console.log(`trivial / floor (p50): ${trivialRatio}×  (target ≤ 1.3×)`);
    console.log(`zod / floor (p50):     ${zodRatio}×`);
    return {
      sandbox_trivial_vs_floor_p50: trivialRatio,
      sandbox_zod_vs_floor_p50: zodRatio,
      ...p50p95('sandbox_trivial', samples.trivial),
      ...p50p95('sandbox_zod', samples.zod),
      ...p50p95('sandbox_floor', samples.floor),
    };
  },
};

function expectPassed(v: { status: string; error?: string }): void {
  if (v.status !== 'passed') throw new Error(`benchmark tool did not pass: ${v.status} ${v.error ?? ''}`);
}
