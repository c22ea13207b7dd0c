import type { Command } from 'commander';
import type { BuiltinReverifyReport, ReverifyScheduleInfo, ReverifySummary } from '../contract/reverify-runs';
import { ScheduleMissingError } from '../contract/errors';
import { WAIT_HELP, withForgeClient } from './connect';
import { ExitCode, UsageError } from './exit-codes';
import { printError, printResult } from './output';
import { progressPrinter } from './progress-display';

/** `forge reverify [--now | --pause | --resume] [--json]`: the re-verification schedule, or a run now. */
export function registerReverify(program: Command): void {
  program
    .command('reverify')
    .description('Show the re-verification schedule; --now runs it and waits for the summary; --pause / --resume')
    .option('--now', 'run re-verification now (or join the run under way) and wait for its summary')
    .option('--pause', 'pause the schedule')
    .option('--resume', 'resume the schedule')
    .option('--json', 'print one JSON object')
    .option('--wait', WAIT_HELP)
    .action(async (opts: { now?: boolean; pause?: boolean; resume?: boolean; json?: boolean; wait?: boolean }) => {
      const json = !!opts.json;
      if ([opts.now, opts.pause, opts.resume].filter(Boolean).length > 1) throw new UsageError('give at most one of --now, --pause, --resume');
      try {
        if (opts.now) {
          const summary = await withForgeClient((forge) => forge.reverifyNow({ onProgress: json ? undefined : progressPrinter() }), { wait: opts.wait });
          printResult(json, summary, () => describeSummary(summary));
          process.exitCode = ExitCode.ok;
          return;
        }
        const info = await withForgeClient((forge) => (opts.pause ? forge.pauseReverify() : opts.resume ? forge.resumeReverify() : forge.reverifySchedule()));
        printResult(json, info, () => describeSchedule(info));
        process.exitCode = ExitCode.ok;
      } catch (err) {
        if (!(err instanceof ScheduleMissingError)) throw err;
        printError(json, err.message);
        process.exitCode = ExitCode.refused;
      }
    });
}

function describeSummary(s: ReverifySummary): string {
  const lines = [
    `re-verified ${s.counts.tested} tool(s) in ${s.counts.batches} batch(es): ${s.counts.passed} passed, ${s.counts.failed} failed (${s.workflowId})`,
  ];
  for (const t of s.tools.filter((t) => t.action !== 'none')) {
    const moved = t.action === 'degraded' && t.activeVersion !== undefined ? ` → v${t.activeVersion} active` : '';
    lines.push(
      `  ${t.name.padEnd(32)} v${String(t.version).padEnd(5)} ${t.verdict.padEnd(12)} ${t.action}${moved}${t.error ? `: ${t.error.split('\n')[0].slice(0, 120)}` : ''}`,
    );
  }
  if (s.quarantined.length) lines.push(`quarantined: ${s.quarantined.join(', ')}`);
  if (s.degraded.length) lines.push(`degraded: ${s.degraded.join(', ')}`);
  if (s.flaky.length) lines.push(`flaky (reported, not quarantined): ${s.flaky.join(', ')}`);
  if (s.builtin) lines.push(...describeBuiltin(s.builtin));
  return lines.join('\n');
}

/** The built-in branch's lines: its verdict, and for a failure the envelope (stage, command, exit code, tails). */
function describeBuiltin(b: BuiltinReverifyReport): string[] {
  const at = b.branch ? ` ${b.branch}${b.commit ? ` at ${b.commit.slice(0, 12)}` : ''}` : '';
  const stages = b.stages.map((st) => `${st.name} ${st.status}`).join(', ');
  const head = `built-in repository ${b.repo}${at}: ${b.status.toUpperCase()}${stages ? ` (${stages})` : ''}${b.reason && b.status !== 'failed' ? `: ${b.reason}` : ''}`;
  if (!b.failure) return [head];
  const f = b.failure;
  const tail = (label: string, text: string) =>
    text.trim()
      ? [
          `  ${label}:`,
          ...text
            .trimEnd()
            .split('\n')
            .slice(-10)
            .map((l) => `    ${l}`),
        ]
      : [];
  return [
    head,
    `  ${f.stage} failed (${f.category}): ${f.reason}`,
    ...(f.command.length ? [`  command: ${f.command.join(' ')} (exit ${f.exitCode ?? '-'})`] : []),
    ...tail('stdout (tail)', f.stdoutTail),
    ...tail('stderr (tail)', f.stderrTail),
    '  reported only: nothing was merged, moved or quarantined',
  ];
}

function describeSchedule(i: ReverifyScheduleInfo): string {
  const last = i.lastRun
    ? `${i.lastRun.workflowId} at ${i.lastRun.startedAt}: ${i.lastRun.status}${
        i.lastRun.summary
          ? ` (${i.lastRun.summary.counts.tested} tested, ${i.lastRun.summary.quarantined.length} quarantined, ${i.lastRun.summary.degraded.length} degraded, ${i.lastRun.summary.flaky.length} flaky${
              i.lastRun.summary.builtin ? `; built-in branch ${i.lastRun.summary.builtin.status}` : ''
            })`
          : ''
      }`
    : 'none yet';
  return [
    `schedule ${i.scheduleId}: every ${Math.round(i.intervalMs / 1000)} s, ${i.paused ? `PAUSED${i.note ? ` (${i.note})` : ''}` : 'active'}`,
    `next run:  ${i.paused ? '(paused)' : (i.nextRuns[0] ?? '-')}`,
    `last run:  ${last}`,
    ...(i.running.length ? [`running:   ${i.running.join(', ')}`] : []),
  ].join('\n');
}
