import type { Command } from 'commander';
import { FORGE_KINDS, RUN_STATUSES } from '../contract/kinds';
import { withForgeClient } from './connect';
import { ExitCode, UsageError } from './exit-codes';
import { printResult } from './output';
import { withOutcome, type RunRow } from '../run-outcome';

/** `forge runs [--kind K] [--status S] [--limit N] [--json]`: recent runs from Temporal visibility. */
export function registerRuns(program: Command): void {
  program
    .command('runs')
    .description('Recent Forge runs from Temporal visibility, newest first')
    .option('--kind <kind>', `one of ${FORGE_KINDS.join(', ')}`)
    .option('--status <status>', `one of ${RUN_STATUSES.join(', ')}`)
    .option('--limit <n>', 'how many', '20')
    .option('--json', 'print one JSON object')
    .action(async (opts: { kind?: string; status?: string; limit: string; json?: boolean }) => {
      if (opts.kind && !(FORGE_KINDS as readonly string[]).includes(opts.kind)) throw new UsageError(`--kind must be one of ${FORGE_KINDS.join(', ')}`);
      if (opts.status && !(RUN_STATUSES as readonly string[]).includes(opts.status)) {
        throw new UsageError(`--status must be one of ${RUN_STATUSES.join(', ')}`);
      }
      const limit = Number(opts.limit);
      if (!Number.isInteger(limit) || limit < 1 || limit > 1000) throw new UsageError('--limit must be a whole number from 1 to 1000');
      const runs = await withForgeClient(async (forge) => {
        const listed = await forge.listRuns({ kind: opts.kind, status: opts.status, limit });
        return Promise.all(listed.map((run) => withOutcome(forge, run)));
      });
      const width = Math.max(80, process.stdout.columns ?? 80);
      printResult(!!opts.json, { runs }, () => (runs.length === 0 ? 'No runs match.' : formatRuns(runs, new Date(), width)));
      process.exitCode = ExitCode.ok;
    });
}

/**
 * The human table: started (local time), outcome (`running: <stage>` for a run still going), how long it took,
 * and the workflow ID, shortened in the middle to fit `width` columns (80 at least; `--json` has the whole ID).
 */
export function formatRuns(runs: RunRow[], now: Date, width = 80): string {
  // No KIND column: the ID's first word says it (tool-deploy/..., schema-migrate/...), and the ID needs the room.
  const head = ['STARTED', 'OUTCOME', 'TOOK'];
  const caps = [11, 18, 6];
  const rows = runs.map((r) => [
    started(new Date(r.startTime)),
    r.outcome === 'running' && r.stage ? `running: ${r.stage}` : r.outcome,
    took(new Date(r.startTime), r.closeTime ? new Date(r.closeTime) : now),
    r.workflowId,
  ]);
  // Each column as wide as its widest cell (up to its cap): the ID gets the rest.
  const widths = caps.map((cap, i) => Math.min(cap, Math.max(head[i].length, ...rows.map((r) => r[i].length))));
  const idWidth = width - widths.reduce((a, b) => a + b + 2, 0) - 1;
  const line = (cells: string[]) =>
    cells
      .map((cell, i) => (i < widths.length ? fit(cell, widths[i]).padEnd(widths[i]) : fit(cell, idWidth)))
      .join('  ')
      .trimEnd();
  return [line([...head, 'WORKFLOW ID']), ...rows.map(line)].join('\n');
}

/** `MM-DD HH:MM` in local time: what an operator compares with the clock on the wall. */
function started(at: Date): string {
  const two = (n: number) => String(n).padStart(2, '0');
  return `${two(at.getMonth() + 1)}-${two(at.getDate())} ${two(at.getHours())}:${two(at.getMinutes())}`;
}

function took(from: Date, to: Date): string {
  const ms = Math.max(0, to.getTime() - from.getTime());
  if (ms < 10_000) return `${(ms / 1000).toFixed(1)}s`;
  if (ms < 60_000) return `${Math.round(ms / 1000)}s`;
  if (ms < 3_600_000) return `${Math.floor(ms / 60_000)}m${String(Math.floor((ms % 60_000) / 1000)).padStart(2, '0')}s`;
  if (ms < 86_400_000) return `${Math.floor(ms / 3_600_000)}h${String(Math.floor((ms % 3_600_000) / 60_000)).padStart(2, '0')}m`;
  return `${Math.floor(ms / 86_400_000)}d`;
}

/** `text` in at most `n` characters; a longer one keeps its head and its tail (an ID's distinctive hash) around `…`. */
function fit(text: string, n: number): string {
  if (text.length <= n) return text;
  const tail = Math.floor((n - 1) / 2);
  return `${text.slice(0, n - 1 - tail)}…${text.slice(text.length - tail)}`;
}
