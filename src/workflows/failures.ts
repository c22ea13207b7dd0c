import { ActivityFailure, ApplicationFailure } from '@temporalio/workflow';
import type { MigrationFailure, MigrationRejection } from '../contract/migration-runs';
import type { PromotionRejection } from '../contract/promotion-runs';
import { FailureType } from '../contract/failures';
import { type ToolRejection } from '../contract/tool-runs';

/** The details of a ToolRejected activity failure, or undefined for any other error. */
export function rejectionOf(err: unknown): ToolRejection | undefined {
  const cause = err instanceof ActivityFailure ? err.cause : err;
  if (cause instanceof ApplicationFailure && cause.type === FailureType.toolRejected) {
    return (cause.details?.[0] as ToolRejection | undefined) ?? { stage: 'validate', verdict: 'refused', message: cause.message };
  }
  return undefined;
}

/** The message of a NotFound activity failure, or undefined for any other error. */
export function notFoundOf(err: unknown): string | undefined {
  const cause = err instanceof ActivityFailure ? err.cause : err;
  return cause instanceof ApplicationFailure && cause.type === FailureType.notFound ? cause.message : undefined;
}

/** The details of a MigrationRejected or MigrationFailed activity failure, or undefined for any other error. */
export function migrationVerdictOf(
  err: unknown,
): { kind: 'rejected'; rejection: MigrationRejection } | { kind: 'failed'; failure: MigrationFailure } | undefined {
  const cause = err instanceof ActivityFailure ? err.cause : err;
  if (!(cause instanceof ApplicationFailure)) return undefined;
  if (cause.type === FailureType.migrationRejected) {
    const rejection = (cause.details?.[0] as MigrationRejection | undefined) ?? { reason: 'invalid', message: cause.message };
    return { kind: 'rejected', rejection };
  }
  if (cause.type === FailureType.migrationFailed) {
    const failure = (cause.details?.[0] as MigrationFailure | undefined) ?? { message: cause.message, error: { code: 'XX000', message: cause.message } };
    return { kind: 'failed', failure };
  }
  return undefined;
}

/** The details of a PromotionRejected activity failure, or undefined for any other error. */
export function promotionRejectionOf(err: unknown): PromotionRejection | undefined {
  const cause = err instanceof ActivityFailure ? err.cause : err;
  if (cause instanceof ApplicationFailure && cause.type === FailureType.promotionRejected) {
    return (cause.details?.[0] as PromotionRejection | undefined) ?? { category: 'refused', stage: 'plan', reason: cause.message };
  }
  return undefined;
}
