import type { Command } from 'commander';
import { UsageError } from './exit-codes';
import { configModule, mcpModule } from './deferred';

/** Where `forge mcp --http` listens unless told otherwise: next to the dev server's Web UI (8233). */
const DEFAULT_MCP_PORT = 8234;

/**
 * `forge mcp [--http [--host H] [--port N]]`: Forge's operations and every active agent tool as an MCP server, over
 * stdio (the default: an MCP client starts `forge mcp` itself) or Streamable HTTP (loopback unless --host says
 * otherwise; FORGE_MCP_TOKEN required). Runs until stdin ends (stdio) or SIGINT / SIGTERM.
 */
export function registerMcp(program: Command): void {
  program
    .command('mcp')
    .description('Serve Forge to MCP clients: stdio by default, Streamable HTTP with --http (bearer token FORGE_MCP_TOKEN)')
    .option('--http', 'serve Streamable HTTP instead of stdio')
    .option('--port <n>', `the HTTP port (0: any free one; default ${DEFAULT_MCP_PORT})`)
    .option('--host <address>', 'the HTTP address to listen on (default 127.0.0.1: this machine only)', '127.0.0.1')
    .action(async (opts: { http?: boolean; port?: string; host: string }, command: Command) => {
      if (!opts.http && opts.port !== undefined) throw new UsageError('--port applies to --http only');
      const port = opts.port === undefined ? DEFAULT_MCP_PORT : Number(opts.port);
      if (!Number.isInteger(port) || port < 0 || port > 65_535) throw new UsageError('--port must be a whole number from 0 to 65535');
      // Configuration (zod) and the MCP SDK load only here: every other command stays as fast to start as before.
      const { ConfigError, loadConfig } = configModule();
      const { ForgeMcp, serveHttp, serveStdio, isLoopback } = mcpModule();
      const config = loadConfig();
      if (opts.http && !config.mcp.token) {
        throw new ConfigError(
          'forge mcp --http needs a bearer token: set FORGE_MCP_TOKEN (at least 16 characters, e.g. `openssl rand -hex 32`)',
          'FORGE_MCP_TOKEN',
        );
      }
      const mcp = await ForgeMcp.open({ config, version: command.parent?.version() ?? 'unknown' });
      const stopped = new Promise<void>((resolve) => {
        process.once('SIGINT', resolve);
        process.once('SIGTERM', resolve);
      });
      try {
        if (!opts.http) {
          await Promise.race([serveStdio(mcp), stopped]);
          return;
        }
        const http = await serveHttp(mcp, { host: opts.host, port, token: config.mcp.token! }).catch((err: NodeJS.ErrnoException) => {
          if (err.code === 'EADDRINUSE' || err.code === 'EADDRNOTAVAIL')
            throw new UsageError(`cannot listen on ${opts.host}:${port} (${err.code}): choose another --port or --host`);
          throw err;
        });
        if (!isLoopback(opts.host))
          process.stderr.write(`forge mcp: listening on ${opts.host}, beyond this machine: keep FORGE_MCP_TOKEN secret and put TLS in front\n`);
        process.stderr.write(`forge mcp: Streamable HTTP at ${http.url} (Authorization: Bearer $FORGE_MCP_TOKEN); Ctrl-C stops it\n`);
        await stopped;
        await http.close();
      } finally {
        await mcp.close();
      }
    });
}
