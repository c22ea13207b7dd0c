import { ApplicationFailure } from '@temporalio/common';
import { FailureType, type ToolRejection } from '../workflows/types';

/** A verdict, not an outage: retrying cannot change it, so the failure is non-retryable and carries the details. */
export function toolRejected(rejection: ToolRejection): ApplicationFailure {
  return ApplicationFailure.create({
    type: FailureType.toolRejected,
    message: rejection.message,
    nonRetryable: true,
    details: [rejection],
  });
}

/** Something the request names is not there (a version, a tool). */
export function notFound(message: string): ApplicationFailure {
  return ApplicationFailure.create({ type: FailureType.notFound, message, nonRetryable: true, details: [{ message }] });
}
