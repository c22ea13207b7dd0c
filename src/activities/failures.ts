import { ApplicationFailure } from '@temporalio/common';
import { FailureType } from '../contract/failures';
import { type ToolRejection } from '../contract/tool-runs';
import type { MigrationFailure, MigrationRejection } from '../contract/migration-runs';

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

/** A migration refused before it ran (policy, checksum): retrying cannot change it. */
export function migrationRejected(rejection: MigrationRejection): ApplicationFailure {
  return ApplicationFailure.create({
    type: FailureType.migrationRejected,
    message: rejection.message,
    nonRetryable: true,
    details: [rejection],
  });
}

/** A migration PostgreSQL refused while it ran; it was rolled back. Retrying would fail the same way. */
export function migrationFailed(failure: MigrationFailure): ApplicationFailure {
  return ApplicationFailure.create({
    type: FailureType.migrationFailed,
    message: failure.message,
    nonRetryable: true,
    details: [failure],
  });
}
