import { ApplicationFailure, ApplicationFailureCategory } from '@temporalio/common';
import { FailureType, type FailureTypeName } from '../contract/failures';
import type { PromotionRejection } from '../contract/promotion-runs';
import { type ToolRejection } from '../contract/tool-runs';
import type { MigrationFailure, MigrationRejection } from '../contract/migration-runs';

// Verdicts are BENIGN: the SDK logs them at DEBUG instead of a WARN with a stack, and they do not count as failed
// activities in Temporal's metrics (Forge counts them itself, by outcome). Faults keep the default category.

/** A non-retryable verdict of `type` carrying its details. */
function verdict(type: FailureTypeName, message: string, details: unknown): ApplicationFailure {
  return ApplicationFailure.create({ type, message, nonRetryable: true, category: ApplicationFailureCategory.BENIGN, details: [details] });
}

/** A verdict, not an outage: retrying cannot change it, so the failure is non-retryable and carries the details. */
export function toolRejected(rejection: ToolRejection): ApplicationFailure {
  return verdict(FailureType.toolRejected, rejection.message, rejection);
}

/** Something the request names is not there (a version, a tool). */
export function notFound(message: string): ApplicationFailure {
  return verdict(FailureType.notFound, message, { message });
}

/** A migration refused before it ran (policy, checksum): retrying cannot change it. */
export function migrationRejected(rejection: MigrationRejection): ApplicationFailure {
  return verdict(FailureType.migrationRejected, rejection.message, rejection);
}

/** A migration PostgreSQL refused while it ran; it was rolled back. Retrying would fail the same way. */
export function migrationFailed(failure: MigrationFailure): ApplicationFailure {
  return verdict(FailureType.migrationFailed, failure.message, failure);
}

/** A promotion refused or failed verification (a path, the plan, a stage, the merge): retrying cannot change it. */
export function promotionRejected(rejection: PromotionRejection): ApplicationFailure {
  return verdict(FailureType.promotionRejected, rejection.reason, rejection);
}
