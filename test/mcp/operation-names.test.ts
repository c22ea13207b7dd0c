import { OPERATIONS } from '../../src/mcp/operations';
import { FORGE_OPERATION_NAMES } from '../../src/contract/tool-name';

// The MCP server lists its operations and the agent's tools under one namespace and hides an agent tool that has an
// operation's name (src/mcp/server.ts): so every operation's name must be reserved, or a deployed tool named like a
// new operation would deploy and then silently vanish from MCP clients.
test('every MCP operation name is reserved for Forge (FORGE_OPERATION_NAMES)', () => {
  const reserved: readonly string[] = FORGE_OPERATION_NAMES;
  expect(OPERATIONS.map((o) => o.name).filter((name) => !reserved.includes(name))).toEqual([]);
});
