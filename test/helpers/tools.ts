/** A small zod tool for platform tests, named `name`, whose output says which `variant` of the source is running. */
export function adderTool(variant: string, name = 'adder'): string {
  return `import { z } from 'zod';
export default {
  name: '${name}',
  description: 'Adds two numbers (${variant}).',
  inputSchema: z.object({ a: z.number(), b: z.number() }),
  async execute({ a, b }: { a: number; b: number }) { return { sum: a + b, variant: '${variant}' }; },
};
`;
}

/**
 * A zod tool whose run waits `ms` (its input) before it answers: long enough to be caught mid-test. The suites whose
 * copies differ (a declared timeoutMs, a marker, a source that is part of a recorded history) keep their own.
 */
export function sleepyTool(name: string, variant = 'one'): string {
  return `import { z } from 'zod';
export default {
  name: '${name}',
  description: 'Takes its time (${variant}).',
  inputSchema: z.object({ ms: z.number() }),
  async execute({ ms }: { ms: number }) {
    await new Promise((r) => setTimeout(r, ms));
    return { waited: ms, variant: '${variant}' };
  },
};
`;
}
