import type { RunProgress, StageRecord } from '../contract/run-progress';

const ICON: Record<StageRecord['status'], string> = { pending: ' ', running: '…', done: '✓', failed: '✗', skipped: '-' };

/**
 * Live progress of a run on stderr: one line per stage as it starts and as it ends, so the output reads the same in a
 * terminal and in a CI log (nothing is redrawn), while stdout stays free for the result.
 */
export function progressPrinter(write: (line: string) => void = (l) => process.stderr.write(`${l}\n`)) {
  const shown = new Map<string, StageRecord['status']>();
  return (progress: RunProgress) => {
    for (const stage of progress.stages) {
      if (stage.status === 'pending' || shown.get(stage.name) === stage.status) continue;
      if (stage.status === 'skipped' && !shown.has(stage.name)) continue;
      shown.set(stage.name, stage.status);
      const took = stage.durationMs !== undefined ? ` (${stage.durationMs} ms)` : '';
      write(`  ${ICON[stage.status]} ${stage.name}${took}${stage.summary ? `: ${stage.summary}` : ''}`);
    }
  };
}
