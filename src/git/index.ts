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
export { PROMOTE_BRANCH_PREFIX, assertBranchName, assertRunId, promoteBranchName } from './names';
export { assertSafeRelativePath, checkProposedPath, writeProposedFile, type ProposedPathInfo } from './path-safety';
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
