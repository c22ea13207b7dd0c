import type { RunProgress, StageRecord } from '../../src/contract/run-progress';
import { progressPrinter } from '../../src/commands/progress-display';

/** The CLI's live progress lines (stderr): one per stage change, and a long stage says it is still running. */
const progress = (stages: [string, StageRecord['status'], number?][]): RunProgress => {
  const steps = stages.map(([name, status, durationMs]) => ({ name, status, ...(durationMs !== undefined ? { durationMs } : {}) }));
  return { kind: 'deploy', subject: 'adder', stage: stages.find(([, s]) => s === 'running')?.[0] ?? 'finished', steps, stages: steps };
};

test('one line per stage as it starts and ends; a long stage says it is still running until it ends', async () => {
  const lines: string[] = [];
  const print = progressPrinter((l) => lines.push(l), 100);
  print(
    progress([
      ['validate', 'done', 3],
      ['test', 'running'],
      ['commit', 'pending'],
    ]),
  );
  await new Promise((r) => setTimeout(r, 350));
  print(
    progress([
      ['validate', 'done', 3],
      ['test', 'done', 340],
      ['commit', 'done', 4],
    ]),
  );
  const stillRunning = lines.filter((l) => l.includes('test still running'));
  expect(lines[0]).toBe('  ✓ validate (3 ms)');
  expect(lines[1]).toBe('  … test');
  expect(stillRunning.length).toBeGreaterThanOrEqual(1);
  expect(stillRunning[0]).toMatch(/^ {2}… test still running \(\d+ s\)$/);
  expect(lines.slice(-2)).toEqual(['  ✓ test (340 ms)', '  ✓ commit (4 ms)']);
  // Once the stage ended, no more "still running" lines.
  const count = lines.length;
  await new Promise((r) => setTimeout(r, 250));
  expect(lines).toHaveLength(count);
});
