import { upsertSearchAttributes, workflowInfo } from '@temporalio/workflow';
import { toolSteps } from './activity-options';
import { notFoundOf } from './failures';
import { Progress } from './progress';
import { refused } from './refusal';
import { runToTheEnd } from './run-to-the-end';
import { ForgeOutcomeKey } from '../contract/search-attributes';
import type { RollbackToolInput, RollbackToolResult } from '../contract/tool-runs';

/**
 * Makes an earlier version of a tool active again (the given one, or the newest below the active one), then
 * publishes agent-tools/. A version that does not exist is `rejected` with the versions that do (a FAILED execution
 * whose details carry that result: refusal.ts).
 *
 * Not cancellable: a cancel request is recorded and the run goes on to its end, whose result says what it did (see
 * {@link runToTheEnd}).
 */
export function rollbackToolWorkflow(input: RollbackToolInput): Promise<RollbackToolResult> {
  return runToTheEnd(() => rollback(input));
}

async function rollback(input: RollbackToolInput): Promise<RollbackToolResult> {
  const { workflowId } = workflowInfo();
  const progress = new Progress('rollback', input.name, ['activate', 'notify']);
  try {
    progress.start('activate');
    const moved = await toolSteps.activateEarlierVersion.executeWithOptions(
      { summary: `activate ${input.name} ${input.toVersion !== undefined ? `v${input.toVersion}` : 'previous version'}` },
      [{ name: input.name, toVersion: input.toVersion, workflowId }],
    );
    progress.done('activate', `v${moved.version}`);
    progress.start('notify');
    // This tool's pointer only, as a deployment publishes: no step of a run touches every tool.
    await toolSteps.publishTools.executeWithOptions({ summary: 'publish agent-tools/' }, [{ names: [input.name] }]);
    progress.done('notify');
    progress.end('rolled-back');
    upsertSearchAttributes([{ key: ForgeOutcomeKey, value: 'rolled-back' }]);
    return {
      status: 'active',
      name: input.name,
      version: moved.version,
      previousVersion: moved.previousVersion,
      workflowId,
      message: `v${moved.version} of ${input.name} is active${moved.previousVersion !== undefined ? ` (was v${moved.previousVersion})` : ''}`,
    };
  } catch (err) {
    const message = notFoundOf(err);
    if (message === undefined) throw err;
    progress.failed('activate', message);
    progress.end('rejected', { message });
    upsertSearchAttributes([{ key: ForgeOutcomeKey, value: 'rejected' }]);
    return refused({ status: 'rejected', name: input.name, workflowId, message }, message);
  }
}
