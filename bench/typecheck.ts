import { ToolTypechecker } from '../src/sandbox/typecheck';
import { percentile, round, statsRow } from './stats';
import type { Bench } from './types';

const RUNS = Number(process.env.BENCH_RUNS ?? 40);

/** The deploy bench's zod tool; `variant` changes the source, so no check is answered from the checker's cache. */
const zodTool = (variant: number) => `import { z } from 'zod';
export default {
  name: 'zod_tool',
  description: 'Converts Celsius to Fahrenheit (variant ${variant}).',
  inputSchema: z.object({ celsius: z.number() }),
  async execute(input: { celsius: number }) { return { fahrenheit: input.celsius * 9 / 5 + 32 + ${variant} * 0 }; },
};`;

/**
 * The deployment's typecheck stage on a small zod tool: the first check of a fresh checker (thread start, the lib,
 * @types/node and zod's declarations parsed), then, warm, one check after another of a changed source, each measured
 * as the stage measures it (the round trip to the checker's thread included).
 */
export const typecheckBench: Bench = {
  name: 'typecheck',
  description: `type check of a small zod tool by the warm checker, ${RUNS} runs after warm-up`,
  async run() {
    const checker = new ToolTypechecker();
    try {
      const cold = await checker.check(zodTool(-1), 'zod_tool');
      expectClean(cold.errors);
      for (let i = 0; i < 5; i++) expectClean((await checker.check(zodTool(-2 - i), 'zod_tool')).errors);
      const samples: number[] = [];
      for (let i = 0; i < RUNS; i++) {
        const result = await checker.check(zodTool(i), 'zod_tool');
        expectClean(result.errors);
        samples.push(result.durationMs);
      }
      console.log(`first check of a fresh checker: ${cold.durationMs} ms`);
      console.log(statsRow('warm check, zod tool', samples));
      const p50 = percentile(samples, 50);
      console.log(`typecheck_zod_tool_p50_ms: ${p50} (goal ≤ 50)`);
      return {
        typecheck_zod_tool_p50_ms: round(p50, 1),
        typecheck_zod_tool_p95_ms: round(percentile(samples, 95), 1),
        typecheck_cold_ms: cold.durationMs,
      };
    } finally {
      await checker.close();
    }
  },
};

function expectClean(errors: { message: string }[]): void {
  if (errors.length > 0) throw new Error(`the benchmark tool has type errors: ${errors.map((e) => e.message).join('; ')}`);
}
