import type { Command } from 'commander';
import { WAIT_HELP, withForgeClient } from './connect';
import { ExitCode, UsageError } from './exit-codes';
import { printResult } from './output';

/** `forge rollback NAME [--to VERSION] [--json]`: through the rollback workflow. */
export function registerRollback(program: Command): void {
  program
    .command('rollback')
    .description('Make an earlier version of a tool active again (default: the one before the active version)')
    .argument('<name>', 'the tool')
    .option('--to <version>', 'the version to make active')
    .option('--json', 'print one JSON object')
    .option('--wait', WAIT_HELP)
    .action(async (name: string, opts: { to?: string; json?: boolean; wait?: boolean }) => {
      let toVersion: number | undefined;
      if (opts.to !== undefined) {
        toVersion = Number(opts.to.replace(/^v/, ''));
        if (!Number.isInteger(toVersion) || toVersion < 1)
          throw new UsageError(`--to must be a version number such as 3 or v3, got ${JSON.stringify(opts.to)}`);
      }
      const result = await withForgeClient((forge) => forge.rollbackTool(name, { toVersion }), { wait: opts.wait });
      printResult(!!opts.json, result, () => result.message);
      process.exitCode = result.status === 'active' ? ExitCode.ok : ExitCode.refused;
    });
}
