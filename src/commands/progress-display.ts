import type { RunProgress, StageRecord } from '../contract/run-progress';

const ICON: Record<StageRecord['status'], string> = { pending: ' ', running: '…', done: '✓', failed: '✗', skipped: '-' };

/** How often a stage still running says so (an agent or a CI log otherwise sees nothing for minutes of tests). */
const STILL_RUNNING_EVERY_MS = 5_000;

/**
 * Live progress of a run on stderr: one line per stage as it starts and as it ends, so the output reads the same in a
 * terminal and in a CI log (nothing is redrawn), while stdout stays free for the result. A stage that runs long
 * says it is still running every {@link STILL_RUNNING_EVERY_MS}, with the time since it was first seen running.
 */
export function progressPrinter(write: (line: string) => void = (l) => process.stderr.write(`${l}\n`), everyMs = STILL_RUNNING_EVERY_MS) {
  const shown = new Map<string, StageRecord['status']>();
  const summaries = new Map<string, string | undefined>();
  let timer: NodeJS.Timeout | undefined;
  const watch = (name: string) => {
    clearInterval(timer);
    const since = Date.now();
    timer = setInterval(() => {
      if (shown.get(name) !== 'running') return clearInterval(timer);
      write(`  ${ICON.running} ${name} still running (${Math.round((Date.now() - since) / 1000)} s)`);
    }, everyMs);
    timer.unref(); // never what keeps the CLI from exiting
  };
  return (progress: RunProgress) => {
    for (const stage of progress.steps) {
      const before = shown.get(stage.name);
      // A running stage whose summary changes says so again (a migration waiting out a lock names who holds it).
      const newSummary = stage.status === 'running' && before === 'running' && summaries.get(stage.name) !== stage.summary;
      if (stage.status === 'pending' || (before === stage.status && !newSummary)) continue;
      if (stage.status === 'skipped' && !shown.has(stage.name)) continue;
      shown.set(stage.name, stage.status);
      summaries.set(stage.name, stage.summary);
      const took = stage.durationMs !== undefined ? ` (${stage.durationMs} ms)` : '';
      write(`  ${ICON[stage.status]} ${stage.name}${took}${stage.summary ? `: ${stage.summary}` : ''}`);
      if (stage.status === 'running' && before !== 'running') watch(stage.name);
    }
    if (![...shown.values()].includes('running')) clearInterval(timer);
  };
}
