import type { Command } from 'commander';
import { WAIT_HELP, withForgeClient } from './connect';
import { ExitCode } from './exit-codes';
import { printResult } from './output';

/** `forge tools [--json]`: the active tools, read by the worker through a workflow. */
export function registerTools(program: Command): void {
  program
    .command('tools')
    .description('List the active tools and their versions')
    .option('--json', 'print one JSON object')
    .option('--wait', WAIT_HELP)
    .action(async (opts: { json?: boolean; wait?: boolean }) => {
      const result = await withForgeClient((forge) => forge.listTools(), { wait: opts.wait });
      printResult(!!opts.json, result, () =>
        result.tools.length === 0
          ? 'No tools are active yet. Deploy one with `forge deploy FILE.ts`.'
          : result.tools
              .map((t) =>
                `${t.name.padEnd(32)} ${(t.activeVersion === null ? '-' : `v${t.activeVersion}`).padEnd(6)} ${t.status.padEnd(11)} ${t.updatedAt}  ${
                  t.reverification ? `(v${t.reverification.failedVersion} fails re-verification) ` : ''
                }${t.description ?? ''}`.trimEnd(),
              )
              .join('\n'),
      );
      process.exitCode = ExitCode.ok;
    });
}
