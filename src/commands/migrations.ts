import type { Command } from 'commander';
import { WAIT_HELP, withForgeClient } from './connect';
import { ExitCode } from './exit-codes';
import { printResult } from './output';

/** `forge migrations [--json]`: `{migrations: [{name, checksum, appliedAt, workflowId, runId, state}]}`, read by the worker. */
export function registerMigrations(program: Command): void {
  program
    .command('migrations')
    .description('List the applied schema migrations, oldest first')
    .option('--json', 'print one JSON object')
    .option('--wait', WAIT_HELP)
    .action(async (opts: { json?: boolean; wait?: boolean }) => {
      const result = await withForgeClient((forge) => forge.listMigrations(), { wait: opts.wait });
      printResult(!!opts.json, result, () =>
        result.migrations.length === 0
          ? 'No migration is applied yet. Apply one with `forge migrate --name NAME FILE.sql`.'
          : result.migrations
              .map((m) =>
                `${m.name.padEnd(40)} ${m.appliedAt}  ${m.checksum.slice(0, 12)}  ${m.workflowId ?? ''}${m.state === 'building' ? '  (building: run it again to finish its online indexes)' : ''}`.trimEnd(),
              )
              .join('\n'),
      );
      process.exitCode = ExitCode.ok;
    });
}
