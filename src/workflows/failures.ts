import { ActivityFailure, ApplicationFailure } from '@temporalio/workflow';
import { FailureType, type ToolRejection } from './types';

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
