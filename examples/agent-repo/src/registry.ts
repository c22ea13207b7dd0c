import { isDeepStrictEqual } from 'node:util';
import { slugifyTool } from './tools/slugify';
import { sumTool } from './tools/sum';
import type { Tool } from './tools/tool';
import { truncateTool } from './tools/truncate';
import { wordCount } from './tools/word-count';

/** The agent's built-in tools. forge.verify.json declares the same names, so no deployed tool can take them. */
export const builtinTools: readonly Tool[] = [wordCount, slugifyTool, sumTool, truncateTool];

/** Name → tool; throws when two tools share a name (the registry would otherwise hide one of them). */
export function createRegistry(tools: readonly Tool[] = builtinTools): ReadonlyMap<string, Tool> {
  const registry = new Map<string, Tool>();
  for (const tool of tools) {
    if (!/^[a-z][a-z0-9_]{0,63}$/u.test(tool.name)) throw new Error(`invalid tool name ${JSON.stringify(tool.name)}`);
    if (registry.has(tool.name)) throw new Error(`two tools are named ${tool.name}`);
    registry.set(tool.name, tool);
  }
  return registry;
}

export interface ToolCheck {
  name: string;
  ok: boolean;
  /** Why the check failed: the tool threw, or gave another output than its example's. */
  error?: string;
}

/** Runs every tool on its own example and compares the output: what the startup smoke relies on. */
export function checkTools(registry: ReadonlyMap<string, Tool>): ToolCheck[] {
  return [...registry.values()].map((tool) => {
    try {
      const output = tool.run(tool.example.input);
      if (isDeepStrictEqual(output, tool.example.output)) return { name: tool.name, ok: true };
      return {
        name: tool.name,
        ok: false,
        error: `expected ${JSON.stringify(tool.example.output)}, got ${JSON.stringify(output)}`,
      };
    } catch (err) {
      return { name: tool.name, ok: false, error: err instanceof Error ? err.message : String(err) };
    }
  });
}
