/**
 * The rule every tool name follows, wherever a name enters Forge (client, CLI, activities, sandbox, registry,
 * configuration): it becomes a directory name under agent-tools/, part of a workflow ID and an MCP tool name.
 */
export const TOOL_NAME_PATTERN = /^[a-z][a-z0-9_]{0,63}$/;

/** What a valid name looks like, in words an agent can act on. */
export const TOOL_NAME_RULE = 'use 1-64 characters of a-z, 0-9 and _, starting with a letter';

export function isToolName(name: unknown): name is string {
  return typeof name === 'string' && TOOL_NAME_PATTERN.test(name);
}

/** The one sentence Forge says about a name that breaks the rule (lower case: callers may prefix or capitalise it). */
export function toolNameMessage(name: unknown): string {
  return `the tool name ${JSON.stringify(name)} is not allowed: ${TOOL_NAME_RULE}`;
}

/**
 * The names of Forge's own operations as an agent's tools (the MCP server's): no agent-authored tool may take them,
 * whatever else is reserved.
 */
export const FORGE_OPERATION_NAMES = [
  'forge',
  'deploy_tool',
  'rollback_tool',
  'delete_tool',
  'list_tools',
  'call_tool',
  'lint_sql',
  'migrate_schema',
  'list_migrations',
  'list_runs',
  'get_run',
  'promote_builtin',
  'reverify',
  'pay',
  'sell_tool',
  'list_services',
  'get_pnl',
] as const;
