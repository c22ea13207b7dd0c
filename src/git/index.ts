export { cleanupRun, listLeftovers, type CleanupRunInput, type CleanupRunResult, type Leftovers } from './cleanup';
export { commitChange, isSameChange, type CommitChangeInput, type CommitChangeResult, type ProposedFile } from './commit';
export {
  DEPENDENCY_FILES,
  dependencyChanges,
  linkNodeModules,
  type LinkDependenciesInput,
  type LinkDependenciesResult,
} from './dependencies';
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
  type VerifyPlanIssue,
} from './errors';
export { GIT_TIMEOUT_MS } from './exec';
export { compileGlob, globSyntaxError } from './glob';
export { type CommitIdentity } from './identity';
export { advanceLiveCheckout, inspectLiveCheckout, type LiveCheckoutInput, type LiveCheckoutResult } from './live-checkout';
export { compareAndSwapBranch, type CompareAndSwapInput, type CompareAndSwapResult } from './merge';
export { PROMOTE_BRANCH_PREFIX, assertBranchName, assertRunId, promoteBranchName } from './names';
export { assertSafeRelativePath, checkProposedPath, writeProposedFile, type ProposedPathInfo } from './path-safety';
export { rebaseChange, type RebaseChangeInput, type RebaseChangeResult } from './rebase';
export {
  CHANGED_FILES_PLACEHOLDER,
  STAGE_NAMES,
  VERIFY_PLAN_FILE,
  builtinToolNames,
  parseVerifyPlan,
  parseVerifyPlanText,
  planStages,
  readVerifyPlan,
  type PlannedStage,
  type StageCommand,
  type StageName,
  type VerifyPlan,
  type VerifyRule,
} from './verify-plan';
export {
  createWorktree,
  defaultWorktreeRoot,
  listWorktrees,
  prepareWorktreeRoot,
  removeWorktree,
  resolveBranchCommit,
  resolveCommit,
  worktreePath,
  type CreateWorktreeInput,
  type CreateWorktreeResult,
  type RegisteredWorktree,
  type RemoveWorktreeInput,
} from './worktree';
