import { runnableModule } from '../../src/sandbox/module-format';
import { runSandbox } from '../../src/sandbox';

describe('the form a compiled tool runs in', () => {
  test('CommonJS unless the module needs ESM (top-level await, import.meta)', async () => {
    expect((await runnableModule('export default { a: 1 };')).format).toBe('cjs');
    expect((await runnableModule('await Promise.resolve(); export default { a: 1 };')).format).toBe('esm');
    expect((await runnableModule('export const url = import.meta.url; export default { a: 1 };')).format).toBe('esm');
  });

  test('the CommonJS form is strict and its top-level this is undefined, as the ES module was', async () => {
    const source = `import { z } from 'zod';
const topThis = typeof this;
const frozen = Object.freeze({ a: 1 });
export default {
  name: 'strictness',
  inputSchema: z.object({}),
  async execute() {
    let threw = false;
    try { (frozen as { a: number }).a = 2; } catch { threw = true; }
    return { topThis, assignmentToFrozenThrew: threw };
  },
};`;
    const v = await runSandbox({ name: 'strictness', source, input: {} });
    expect(v).toMatchObject({ status: 'passed', output: { topThis: 'undefined', assignmentToFrozenThrew: true } });
  });

  test("either way the tool behaves as the ES module it was written as: Node's interop and the zod it imported", async () => {
    const tool = (extra: string) => `import { z } from 'zod';
import pg from 'pg';                       // a CommonJS package: its default import is module.exports
${extra}
export default {
  name: 'shape',
  inputSchema: z.object({ city: z.string().describe('where to look') }),
  async execute() {
    return { poolIsClass: typeof pg.Pool === 'function', file: typeof __filename === 'string' ? __filename : (globalThis as { where?: string }).where };
  },
};`;
    const cjs = await runSandbox({ name: 'shape', source: tool(''), input: { city: 'Oslo' } });
    const esm = await runSandbox({ name: 'shape', source: tool('(globalThis as { where?: string }).where = import.meta.url;'), input: { city: 'Oslo' } });
    for (const [v, file] of [
      [cjs, /tool\.cjs$/],
      [esm, /tool\.mjs$/],
    ] as const) {
      expect(v.status).toBe('passed');
      expect((v.output as { poolIsClass: boolean }).poolIsClass).toBe(true);
      expect((v.output as { file: string }).file).toMatch(file);
      // The input schema's description survives: the harness asked the same zod instance the tool used.
      expect(v.diagnostics?.tool?.inputJsonSchema).toMatchObject({ properties: { city: { type: 'string', description: 'where to look' } } });
    }
  });
});
