import type { CallToolResult, Tool } from '@modelcontextprotocol/sdk/types.js';
import type { ToolDescriptor, ToolRegistry } from '../registry';

/**
 * An active agent-authored tool as an MCP tool: its name, its description and the input JSON Schema the sandbox derived
 * from its zod schema when the version was tested. The tool's own zod schema stays authoritative: it validates every
 * call inside the sandbox.
 */
export function agentToolDefinition(tool: ToolDescriptor): Tool {
  return {
    name: tool.name,
    description: tool.description || `${tool.name}: an agent-authored tool (v${tool.version}) deployed through Forge.`,
    inputSchema: objectSchema(tool.inputJsonSchema),
    // Nothing is known of what an agent's code does: the spec's most cautious hints, stated rather than implied.
    annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: true },
    _meta: { 'forge/version': tool.version, 'forge/contentHash': tool.contentHash },
  };
}

/** MCP requires an object schema for a tool's input; a tool without one (or with another type) takes any object. */
function objectSchema(schema: unknown): Tool['inputSchema'] {
  if (schema && typeof schema === 'object' && (schema as { type?: unknown }).type === 'object') {
    // `$schema` names zod's draft; clients validate with their own.
    const { $schema: _draft, ...rest } = schema as Record<string, unknown>;
    return rest as Tool['inputSchema'];
  }
  return { type: 'object' };
}

/**
 * Calls the active version through the registry, exactly as `forge call` and an agent's registry do: a bounded,
 * isolated sandbox process per call, aborted when the client cancels. A failure is a tool error the model can read,
 * with its status (a sandbox verdict, `not_found`, ...) in the structured content.
 */
export async function callAgentTool(registry: ToolRegistry, name: string, args: unknown, signal: AbortSignal): Promise<CallToolResult> {
  const result = await registry.invoke(name, args ?? {}, { signal });
  if (!result.ok) {
    return {
      content: [{ type: 'text', text: `${name} failed (${result.status}): ${result.error}` }],
      structuredContent: { ok: false, name, version: result.version, status: result.status, error: result.error, durationMs: result.durationMs },
      isError: true,
    };
  }
  const output = result.output;
  const isObject = output !== null && typeof output === 'object' && !Array.isArray(output);
  return {
    content: [{ type: 'text', text: JSON.stringify(output) ?? 'null' }],
    // A tool without an output schema may still return structured content: its output, when that is an object.
    ...(isObject ? { structuredContent: output as Record<string, unknown> } : {}),
  };
}
