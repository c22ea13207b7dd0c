// The verdict types are part of the contract every layer shares; the sandbox is where they are decided.
export { SANDBOX_STATUSES } from '../contract/sandbox-verdict';
export type { SandboxDiagnostics, SandboxStatus, SandboxVerdict, SourceLocation } from '../contract/sandbox-verdict';
