import path from 'node:path';
import type { Command } from 'commander';
import type { ProposedChange, PromoteBuiltinResult } from '../contract/promotion-runs';
import type { RunProgress } from '../contract/run-progress';
import { WAIT_HELP, withForgeClient } from './connect';
import { ExitCode, UsageError } from './exit-codes';
import { printResult } from './output';
import { progressPrinter } from './progress-display';
import { readInputFile } from './read-input';
import { collect } from './repeatable';

/** How often a long stage says it is still running (stderr; nothing is redrawn, so CI logs read the same). */
const TIMER_EVERY_MS = 10_000;

/**
 * `forge promote [--repo PATH] [--branch B] --change REL_PATH=LOCAL_FILE [--change ...] [--message TEXT] [--dry-run]
 * [--json]`: through the promotion workflow (CLI.md).
 */
export function registerPromote(program: Command): void {
  program
    .command('promote')
    .description("Promote a change to the agent's built-in code: verify it in an isolated worktree, then move the branch to exactly the tested commit")
    .option('--repo <path>', "the agent's repository (default: FORGE_BUILTIN_REPO, or $FORGE_HOME/agent-repo)")
    .option('--branch <name>', 'the branch to promote into (default: the one the repository has checked out)')
    .option('--change <rel=file>', 'a file of the change: its path in the repository = the local file with its new content (repeatable)', collect, [])
    .option('--message <text>', 'the commit message')
    .option('--dry-run', 'verify everything, merge nothing')
    .option('--json', 'print one JSON object')
    .option('--wait', WAIT_HELP)
    .action(async (opts: { repo?: string; branch?: string; change: string[]; message?: string; dryRun?: boolean; json?: boolean; wait?: boolean }) => {
      if (opts.change.length === 0) throw new UsageError('name at least one --change REL_PATH=LOCAL_FILE');
      const changes: ProposedChange[] = [];
      for (const spec of opts.change) {
        const eq = spec.indexOf('=');
        if (eq <= 0 || eq === spec.length - 1) throw new UsageError(`--change ${JSON.stringify(spec)}: write REL_PATH=LOCAL_FILE`);
        changes.push({ path: spec.slice(0, eq), content: await readInputFile(spec.slice(eq + 1)) });
      }
      const result = await withForgeClient(
        async (forge) => {
          const handle = await forge.startPromoteBuiltin({
            repo: opts.repo === undefined ? undefined : path.resolve(opts.repo),
            branch: opts.branch,
            changes,
            message: opts.message,
            dryRun: !!opts.dryRun,
          });
          process.stderr.write(`${opts.dryRun ? 'verifying' : 'promoting'} ${changes.length} file(s) — run ${handle.workflowId}\n`);
          const timer = runningTimer();
          try {
            const printStages = progressPrinter();
            return await handle.result({
              onProgress: (p) => {
                printStages(p);
                timer.update(p);
              },
            });
          } finally {
            timer.stop();
          }
        },
        { wait: opts.wait },
      );
      printResult(!!opts.json, result, () => describePromotion(result));
      process.exitCode = result.status === 'rejected' ? ExitCode.refused : ExitCode.ok;
    });
}

/** Every TIMER_EVERY_MS, one line saying which step is running and for how long. */
function runningTimer() {
  let running: { name: string; since: number } | undefined;
  const interval = setInterval(() => {
    if (running) process.stderr.write(`  … ${running.name} running for ${Math.round((Date.now() - running.since) / 1000)} s\n`);
  }, TIMER_EVERY_MS);
  interval.unref();
  return {
    update(progress: RunProgress) {
      const stage = progress.steps.find((s) => s.status === 'running');
      if (!stage) running = undefined;
      else if (running?.name !== stage.name) running = { name: stage.name, since: Date.now() };
    },
    stop: () => clearInterval(interval),
  };
}

function describePromotion(r: PromoteBuiltinResult): string {
  const lines: string[] = [];
  if (r.status === 'promoted') lines.push(`promoted: ${r.message}`);
  else if (r.status === 'verified') lines.push(`verified (dry run): ${r.message}`);
  else {
    const f = r.diagnostics.failure;
    lines.push(`rejected at ${f?.stage ?? 'an unknown step'} (${f?.category ?? 'infra'}): ${r.message}`);
    const failed = r.diagnostics.stages.find((s) => s.status !== 'pass' && s.status !== 'skipped');
    if (failed) {
      lines.push(`  command: ${failed.command.join(' ')} (exit ${failed.exitCode ?? '-'}, ${failed.durationMs} ms)`);
      for (const l of failed.locations?.slice(0, 10) ?? []) lines.push(`  ${l.file}:${l.line}${l.column ? `:${l.column}` : ''}: ${l.message}`);
      const tail = (failed.stderrTail || failed.stdoutTail).trimEnd();
      if (tail) lines.push('--- output (tail) ---', tail.split('\n').slice(-20).join('\n'));
    }
  }
  lines.push(
    `base ${r.baseCommit.slice(0, 12) || '-'}${r.mergedCommit ? ` → ${r.mergedCommit.slice(0, 12)}` : ''} on ${r.branch || '-'} (${r.rounds} round(s))`,
  );
  return lines.join('\n');
}
