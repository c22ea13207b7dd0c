import type { Command } from 'commander';
import { WAIT_HELP, withForgeClient } from './connect';
import { ExitCode } from './exit-codes';
import { printResult } from './output';

/** `forge delete NAME [--json]`: through the delete workflow. */
export function registerDelete(program: Command): void {
  program
    .command('delete')
    .description('Deactivate a tool and remove its versions')
    .argument('<name>', 'the tool')
    .option('--json', 'print one JSON object')
    .option('--wait', WAIT_HELP)
    .action(async (name: string, opts: { json?: boolean; wait?: boolean }) => {
      const result = await withForgeClient((forge) => forge.deleteTool(name), { wait: opts.wait });
      printResult(!!opts.json, result, () => result.message);
      process.exitCode = result.status === 'deleted' ? ExitCode.ok : ExitCode.refused;
    });
}
