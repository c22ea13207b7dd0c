import { InvalidInputError } from './errors';

/** Branches of promotion runs live under this prefix: `forge/promote/<runId>`. */
export const PROMOTE_BRANCH_PREFIX = 'forge/promote/';

/**
 * A run id becomes a directory name under the worktree root and the last part of a branch name, so it is kept to
 * characters that are safe in both: letters, digits, `.`, `_` and `-`, starting with a letter or digit, at most 128,
 * with no `..` and no `.lock` ending (git refuses those in ref names).
 */
const RUN_ID = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;

/** @throws InvalidInputError unless `runId` is usable as a directory and branch name component (see {@link RUN_ID}). */
export function assertRunId(runId: unknown): asserts runId is string {
  if (typeof runId !== 'string' || !RUN_ID.test(runId)) {
    throw new InvalidInputError('runId', runId, 'use 1-128 of A-Z a-z 0-9 . _ -, starting with a letter or digit');
  }
  if (runId.includes('..') || runId.endsWith('.lock') || runId.endsWith('.')) {
    throw new InvalidInputError('runId', runId, 'it may not contain "..", nor end with "." or ".lock"');
  }
}

/** The branch a run commits its change on. @throws InvalidInputError for a bad run id. */
export function promoteBranchName(runId: string): string {
  assertRunId(runId);
  return `${PROMOTE_BRANCH_PREFIX}${runId}`;
}

/**
 * A cheap, conservative check of a branch name (the short name, without `refs/heads/`), mirroring git's
 * check-ref-format rules so no git process is needed and nothing shaped like an option reaches git's argv.
 * @throws InvalidInputError
 */
export function assertBranchName(branch: unknown): asserts branch is string {
  const bad = (reason: string) => new InvalidInputError('branch', branch, reason);
  if (typeof branch !== 'string' || branch === '') throw bad('it must be a non-empty string');
  if (branch.startsWith('-')) throw bad('it may not start with "-"');
  if (branch === 'HEAD' || branch === '@') throw bad('it names no branch');
  // eslint-disable-next-line no-control-regex
  if (/[\x00-\x20\x7f~^:?*[\\]/.test(branch)) throw bad('it contains a space, a control character or one of ~^:?*[\\');
  if (branch.includes('..') || branch.includes('@{') || branch.includes('//')) throw bad('it contains "..", "@{" or "//"');
  if (branch.startsWith('/') || branch.endsWith('/') || branch.endsWith('.')) throw bad('it starts or ends with "/" or ends with "."');
  for (const part of branch.split('/')) {
    if (part.startsWith('.') || part.endsWith('.lock')) throw bad('a component starts with "." or ends with ".lock"');
  }
}
