import { ApplicationFailureCategory } from '@temporalio/common';
import { ApplicationFailure } from '@temporalio/workflow';
import { FailureType } from '../contract/failures';

/**
 * Ends a refused run (a rejected deployment, a rollback or delete of nothing, a refused migration or promotion): the
 * workflow fails with a non-retryable `ForgeRunRefused` whose details are the run's typed result, so the Web UI's list
 * shows it Failed beside the Completed runs, and ForgeClient hands the caller the same result a completed run gives.
 * BENIGN: a refusal is an answer, not a fault (no error metrics, no stack in the worker's log; the run's outcome line
 * says it). Call it outside any try whose catch would take the failure for a fault of the run's own steps.
 */
export function refused<R>(result: R, message: string): never {
  throw ApplicationFailure.create({
    type: FailureType.runRefused,
    message,
    nonRetryable: true,
    details: [result],
    category: ApplicationFailureCategory.BENIGN,
  });
}
