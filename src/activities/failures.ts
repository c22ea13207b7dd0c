import { ApplicationFailure, ApplicationFailureCategory } from '@temporalio/common';
import { FailureType } from '../contract/failures';
import { type ToolRejection } from '../contract/tool-runs';
import type { MigrationFailure, MigrationRejection } from '../contract/migration-runs';

// Verdicts are BENIGN: the SDK logs them at DEBUG instead of a WARN with a stack, and they do not count as failed
// activities in Temporal's metrics (Forge counts them itself, by outcome). Faults keep the default category.

/** A verdict, not an outage: retrying cannot change it, so the failure is non-retryable and carries the details. */
export function toolRejected(rejection: ToolRejection): ApplicationFailure {
  return ApplicationFailure.create({
    type: FailureType.toolRejected,
    message: rejection.message,
    nonRetryable: true,
    category: ApplicationFailureCategory.BENIGN,
    details: [rejection],
  });
}

/** Something the request names is not there (a version, a tool). */
export function notFound(message: string): ApplicationFailure {
  return ApplicationFailure.create({
    type: FailureType.notFound,
    message,
    nonRetryable: true,
    category: ApplicationFailureCategory.BENIGN,
    details: [{ message }],
  });
}

/** A migration refused before it ran (policy, checksum): retrying cannot change it. */
export function migrationRejected(rejection: MigrationRejection): ApplicationFailure {
  return ApplicationFailure.create({
    type: FailureType.migrationRejected,
    message: rejection.message,
    nonRetryable: true,
    category: ApplicationFailureCategory.BENIGN,
    details: [rejection],
  });
}

/** A migration PostgreSQL refused while it ran; it was rolled back. Retrying would fail the same way. */
export function migrationFailed(failure: MigrationFailure): ApplicationFailure {
  return ApplicationFailure.create({
    type: FailureType.migrationFailed,
    message: failure.message,
    nonRetryable: true,
    category: ApplicationFailureCategory.BENIGN,
    details: [failure],
  });
}
