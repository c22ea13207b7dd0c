import { upsertSearchAttributes, workflowInfo } from '@temporalio/workflow';
import { toolSteps } from './activity-options';
import { Progress } from './progress';
import { refused } from './refusal';
import { runToTheEnd } from './run-to-the-end';
import { ForgeOutcomeKey } from '../contract/search-attributes';
import type { DeleteToolInput, DeleteToolResult } from '../contract/tool-runs';

/**
 * Deactivates a tool and removes its stored versions, then publishes agent-tools/ without it. Version numbers are
 * not reused: a later deployment of the same name continues above the highest one ever given.
 *
 * Not cancellable, for the reason {@link runToTheEnd} gives: a cancel request is recorded and the run goes on to its
 * end, whose result says what it did.
 */
export function deleteToolWorkflow(input: DeleteToolInput): Promise<DeleteToolResult> {
  return runToTheEnd(() => deleteTool(input));
}

async function deleteTool(input: DeleteToolInput): Promise<DeleteToolResult> {
  const { workflowId } = workflowInfo();
  const progress = new Progress('delete', input.name, ['remove', 'notify']);
  progress.start('remove');
  const removed = await toolSteps.removeTool.executeWithOptions({ summary: `remove ${input.name}` }, [{ name: input.name, workflowId }]);
  if (removed.previousVersion === undefined && removed.removedVersions === 0) {
    progress.failed('remove', 'no such tool');
    progress.end('rejected', { message: `there is no tool named "${input.name}"` });
    upsertSearchAttributes([{ key: ForgeOutcomeKey, value: 'rejected' }]);
    const message = `there is no tool named "${input.name}"`;
    return refused({ status: 'rejected', name: input.name, workflowId, message }, message);
  }
  progress.done('remove', `${removed.removedVersions} version(s)`);
  progress.start('notify');
  // This tool's pointer only, as a deployment publishes: no step of a run touches every tool.
  await toolSteps.publishTools.executeWithOptions({ summary: 'publish agent-tools/' }, [{ names: [input.name] }]);
  progress.done('notify');
  progress.end('deleted');
  upsertSearchAttributes([{ key: ForgeOutcomeKey, value: 'deleted' }]);
  return {
    status: 'deleted',
    name: input.name,
    previousVersion: removed.previousVersion,
    removedVersions: removed.removedVersions,
    workflowId,
    message: `${input.name} is deleted${removed.previousVersion !== undefined ? ` (v${removed.previousVersion} was active)` : ''}`,
  };
}
