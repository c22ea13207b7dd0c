import type { Command } from 'commander';
import { beforeExit } from './at-exit';
import { ExitCode } from './exit-codes';
import { printResult } from './output';
import { parseJsonOption } from './read-input';
import { configModule, registryModule, sandboxModule } from './deferred';

/**
 * `forge call NAME --input JSON [--json]`: invokes the active version exactly as an agent's registry would — from
 * agent-tools/, in a bounded child process — so it needs neither Temporal nor the database.
 */
export function registerCall(program: Command): void {
  program
    .command('call')
    .description("Invoke a tool's active version the way an agent's registry does")
    .argument('<name>', 'the tool')
    .option('--input <json>', 'the input', '{}')
    .option('--json', 'print one JSON object')
    .action(async (name: string, opts: { input: string; json?: boolean }) => {
      const input = parseJsonOption('--input', opts.input);
      // Loaded when the command runs (see at-exit.ts); the tool's run may leave its cleanup to finish before exit.
      const { loadConfig } = configModule();
      const { ToolRegistry } = registryModule();
      const { sandboxCleanupsDone } = sandboxModule();
      beforeExit(sandboxCleanupsDone);
      const config = loadConfig();
      const registry = await ToolRegistry.open({ dir: config.agentToolsDir, limits: config.sandbox.limits, onReloadError: () => undefined, spares: 0 });
      try {
        const result = await registry.invoke(name, input);
        // No tool at all: nothing has written this directory, which a worker of this platform does (forge call reads
        // it without Temporal, so it cannot ask whether one runs).
        const hint =
          !result.ok && result.status === 'not_found' && registry.list().length === 0
            ? `; ${config.agentToolsDir} holds no tool: a Forge worker writes the active ones there (start one with \`forge up\` or \`forge worker\`, with the same FORGE_AGENT_TOOLS_DIR), then deploy with \`forge deploy\``
            : '';
        const out = result.ok
          ? { ok: true, output: result.output, name, version: result.version, durationMs: result.durationMs }
          : { ok: false, error: result.error + hint, name, version: result.version, status: result.status, durationMs: result.durationMs };
        printResult(!!opts.json, out, () => (result.ok ? JSON.stringify(result.output, null, 2) : `${name}: ${result.status}: ${result.error}${hint}`));
        process.exitCode = result.ok ? ExitCode.ok : ExitCode.refused;
      } finally {
        await registry.close();
      }
    });
}
