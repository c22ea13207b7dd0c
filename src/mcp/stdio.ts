import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import type { ForgeMcp } from './server';

/**
 * Serves one MCP client over this process's stdin and stdout (the client started the process: it holds it already,
 * so no token). Resolves once the client goes away: stdin ends, or the transport closes.
 */
export async function serveStdio(mcp: ForgeMcp): Promise<void> {
  const transport = new StdioServerTransport();
  const closed = new Promise<void>((resolve) => {
    process.stdin.once('end', resolve);
    process.stdin.once('close', resolve);
    transport.onclose = () => resolve();
  });
  await mcp.createServer().connect(transport);
  await closed;
}
