import { ApplicationFailureCategory } from '@temporalio/common';
import { ApplicationFailure, patched } from '@temporalio/workflow';
import { FailureType } from '../contract/failures';

/**
 * The patch that made refusals end runs as failures. A run started before it (no marker in its history) still ends
 * as it began: completed, the refusal in its result (README, "Changing a workflow").
 */
export const REFUSAL_FAILS_THE_RUN = 'forge-refusal-fails-the-run';

/**
 * Ends a refused run (a rejected deployment, a rollback or delete of nothing, a refused migration or promotion): the
 * workflow fails with a non-retryable `ForgeRunRefused` whose details are the run's typed result, so the Web UI's list
 * shows it Failed beside the Completed runs, and ForgeClient hands the caller the same result a completed run gives.
 * BENIGN: a refusal is an answer, not a fault (no error metrics, no stack in the worker's log; the run's outcome line
 * says it). Call it outside any try whose catch would take the failure for a fault of the run's own steps.
 */
export function refused<R>(result: R, message: string): R {
  if (!patched(REFUSAL_FAILS_THE_RUN)) return result;
  throw ApplicationFailure.create({
    type: FailureType.runRefused,
    message,
    nonRetryable: true,
    details: [result],
    category: ApplicationFailureCategory.BENIGN,
  });
}
