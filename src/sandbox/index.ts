export { runSandbox, sandboxCleanupsDone, type SandboxRequest } from './run';
export { SandboxPool } from './pool';
export { HarnessSnapshots } from './harness-snapshot';
export {
  runContainedProcess,
  type CapturedOutput,
  type ContainedOutcome,
  type ContainedProcessLimits,
  type ContainedProcessOptions,
  type ContainedProcessResult,
} from './contained-process';
export { compileTool, type CompileResult } from './compile';
export { DEFAULT_LIMITS, resolveLimits, defaultConcurrency, type SandboxLimits } from './limits';
export { containment, type ContainmentMode } from './containment';
export { SANDBOX_STATUSES, type SandboxStatus, type SandboxVerdict, type SandboxDiagnostics } from './verdict';
export { describeIsolation } from './isolation';
