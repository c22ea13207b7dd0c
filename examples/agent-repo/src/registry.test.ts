import { builtinTools, checkTools, createRegistry } from './registry';
import type { Tool } from './tools/tool';

describe('registry', () => {
  it('holds every built-in tool under its name', () => {
    const registry = createRegistry();
    expect([...registry.keys()].sort()).toEqual(['slugify', 'sum', 'truncate', 'word_count']);
    expect(registry.size).toBe(builtinTools.length);
  });

  it('refuses two tools with one name', () => {
    expect(() => createRegistry([builtinTools[0], builtinTools[0]])).toThrow('two tools are named word_count');
  });

  it('passes the check of every built-in tool', () => {
    expect(checkTools(createRegistry()).filter((c) => !c.ok)).toEqual([]);
  });

  it('reports a tool whose output is not its example output', () => {
    const wrong: Tool = { name: 'wrong', description: '', run: () => 1, example: { input: {}, output: 2 } };
    expect(checkTools(createRegistry([wrong]))).toEqual([{ name: 'wrong', ok: false, error: 'expected 2, got 1' }]);
  });
});
