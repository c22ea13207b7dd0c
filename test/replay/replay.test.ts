import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { temporal } from '@temporalio/proto';
import { Worker } from '@temporalio/worker';
import { quietTemporalRuntime, workflowBundle } from '../helpers/platform';

/**
 * Every released workflow shape must still replay: a running deployment or migration that a new worker picks up
 * after an upgrade follows the same code path it started on. The histories were recorded by record-histories.ts.
 */
const dir = path.join(__dirname, 'histories');
const files = readdirSync(dir).filter((f) => f.endsWith('.history.b64'));

test('saved histories are present', () => {
  expect(files.length).toBeGreaterThanOrEqual(6);
});

test.each(files)('%s replays with the current workflow code', async (file) => {
  quietTemporalRuntime();
  const history = temporal.api.history.v1.History.decode(Buffer.from(readFileSync(path.join(dir, file), 'utf8').trim(), 'base64'));
  await Worker.runReplayHistory({ workflowBundle: await workflowBundle() }, history, `replay-${file}`);
}, 120_000);
