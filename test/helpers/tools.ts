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
