import type { Command } from 'commander';
import { RUN_STATUSES } from '../client';
import { withForgeClient } from './connect';
import { ExitCode, UsageError } from './exit-codes';
import { printResult } from './output';

const KINDS = ['deploy', 'rollback', 'delete', 'query', 'migrate', 'promote', 'reverify'];

/** `forge runs [--kind K] [--status S] [--limit N] [--json]`: recent runs from Temporal visibility. */
export function registerRuns(program: Command): void {
  program
    .command('runs')
    .description('Recent Forge runs from Temporal visibility, newest first')
    .option('--kind <kind>', `one of ${KINDS.join(', ')}`)
    .option('--status <status>', `one of ${RUN_STATUSES.join(', ')}`)
    .option('--limit <n>', 'how many', '20')
    .option('--json', 'print one JSON object')
    .action(async (opts: { kind?: string; status?: string; limit: string; json?: boolean }) => {
      if (opts.kind && !KINDS.includes(opts.kind)) throw new UsageError(`--kind must be one of ${KINDS.join(', ')}`);
      if (opts.status && !(RUN_STATUSES as readonly string[]).includes(opts.status)) {
        throw new UsageError(`--status must be one of ${RUN_STATUSES.join(', ')}`);
      }
      const limit = Number(opts.limit);
      if (!Number.isInteger(limit) || limit < 1 || limit > 1000) throw new UsageError('--limit must be a whole number from 1 to 1000');
      const runs = await withForgeClient((forge) => forge.listRuns({ kind: opts.kind, status: opts.status, limit }));
      printResult(!!opts.json, { runs }, () =>
        runs.length === 0
          ? 'No runs match.'
          : runs
              .map((r) => `${r.startTime}  ${r.status.padEnd(10)} ${(r.outcome ?? '').padEnd(12)} ${r.workflowId}`)
              .join('\n'),
      );
      process.exitCode = ExitCode.ok;
    });
}
