/**
 * Git core of built-in promotions (issue 11): plain TypeScript, no Temporal. Every operation is idempotent ("already
 * done" is a success), safe to call twice at once for the same run, and runs git through execFile (no shell, no
 * hooks, bounded by GIT_TIMEOUT_MS), started by a small helper process (spawner.ts: from a worker's large process each
 * start would cost ~20 ms). Verdicts (branch moved, conflict, refused live checkout, install needed) are
 * typed results; bad input is a typed error naming it (errors.ts); anything else is infrastructure (retry).
 *
 * The order a promotion takes:
 *  1. `resolveBranchCommit(repo, branch)` → base; `readVerifyPlan(repo, base)` → plan (the base's plan, never the
 *     change's); `planStages(plan, paths)` → the commands of each stage, or UnmappedPathError (fail closed, before any
 *     worktree exists).
 *  2. `createWorktree({repo, runId, commit: base, root})` → path; `linkNodeModules(...)` → linked | install-needed.
 *     Compensation: `cleanupRun`.
 *  3. `commitChange({...files, message, identity, date})` → the tested-to-be commit on `forge/promote/<runId>`.
 *  4. Run the stages' argv in the worktree (cwd = its root; `{changedFiles}` already expanded).
 *  5. `mergeIntoBranch` (= `inspectLiveCheckout` → `compareAndSwapBranch` → `advanceLiveCheckout`, each read done
 *     once): refused (nothing moved) | merged | already-merged | branch-moved {head}: then `rebaseChange({onto:
 *     head})` → `createWorktree({commit: rebased})` (a fresh one) → link → stages again → merge with base = head.
 *  6. Always: `cleanupRun({repo, runId, root})`; `listLeftovers` shows what is left (nothing).
 */
export { cleanupRun, listLeftovers } from './cleanup';
export { commitChange, type CommitChangeInput, type ProposedFile } from './commit';
export { linkNodeModules } from './dependencies';
export {
  BranchNotFoundError,
  CommitNotFoundError,
  EmptyChangeError,
  GitCommandError,
  InvalidInputError,
  RunStateConflictError,
  UnmappedPathError,
  UnsafePathError,
  VerifyPlanError,
  WorktreeRootError,
} from './errors';
export { compileGlob, globSyntaxError } from './glob';
export { headSignature } from './head-signature';
export { type CommitIdentity } from './identity';
export { advanceLiveCheckout, inspectLiveCheckout, mergeIntoBranch } from './live-checkout';
export { compareAndSwapBranch } from './merge';
export { assertSafeRelativePath, checkProposedPath, writeProposedFile } from './path-safety';
export { rebaseChange } from './rebase';
export {
  builtinToolNames,
  checkedOutBuiltinToolNames,
  parseVerifyPlan,
  parseVerifyPlanText,
  planStages,
  planStagesForTree,
  readVerifyPlan,
  trackedFiles,
  type PlannedStage,
  type VerifyPlan,
} from './verify-plan';
export { checkedOutBranch, createWorktree, isRepository, listWorktrees, resolveBranchCommit } from './worktree';
