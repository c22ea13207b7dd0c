import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { temporal } from '@temporalio/proto';
import { Worker } from '@temporalio/worker';
import * as workflows from '../../src/workflows';
import { quietTemporalRuntime, workflowBundle } from '../helpers/platform';

/**
 * Every released workflow shape must still replay: a run that a new worker picks up after an upgrade follows the same
 * commands it started with. A change that breaks one of these histories would break runs in flight; it needs
 * `patched()` (README, "Changing a workflow"). The histories are in test/fixtures/histories/, recorded by
 * `npm run histories:record` (test/replay/record-histories.ts).
 */
const dir = path.join(__dirname, '..', 'fixtures', 'histories');
const files = readdirSync(dir)
  .filter((f) => f.endsWith('.history.b64'))
  .sort();
const histories = files.map((file) => ({
  file,
  history: temporal.api.history.v1.History.decode(Buffer.from(readFileSync(path.join(dir, file), 'utf8').trim(), 'base64')),
}));

/** The workflow type a history ran: the name in its first event. */
const workflowTypeOf = (history: temporal.api.history.v1.IHistory) =>
  history.events?.[0]?.workflowExecutionStartedEventAttributes?.workflowType?.name ?? '(no WorkflowExecutionStarted event)';

test('every workflow the worker registers has at least one saved history', () => {
  // The bundle's entry exports the workflows (functions) and their query definitions (objects).
  const registered = Object.entries(workflows)
    .filter(([, value]) => typeof value === 'function')
    .map(([name]) => name);
  expect(registered.length).toBeGreaterThan(0);
  const covered = new Set(histories.map((h) => workflowTypeOf(h.history)));
  const missing = registered.filter((name) => !covered.has(name));
  if (missing.length > 0) {
    throw new Error(
      `no saved history in test/fixtures/histories/ for ${missing.join(', ')}: add its released shapes to ` +
        'test/replay/record-histories.ts and run `npm run histories:record`',
    );
  }
});

test('every saved history replays with the current workflow code', async () => {
  quietTemporalRuntime();
  const results = Worker.runReplayHistories(
    { workflowBundle: await workflowBundle() },
    // The file name is the replay's workflow ID, so a result names the history it came from.
    histories.map(({ file, history }) => ({ workflowId: file, history })),
  );
  const replayed: string[] = [];
  const failures: string[] = [];
  for await (const result of results) {
    replayed.push(result.workflowId);
    if (result.error) failures.push(`${result.workflowId}: ${result.error.name}: ${result.error.message}`);
  }
  expect(failures).toEqual([]);
  expect(replayed).toEqual(files);
}, 120_000);
