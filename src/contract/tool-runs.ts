/**
 * Inputs and results of the tool workflows (deploy, rollback, delete, list): plain JSON, shared by the client, the
 * activities and the workflows.
 */
import type { DeployToolInput } from './inputs';
import type { StageRecord } from './run-progress';
import type { SandboxDiagnostics, SandboxStatus, TypeCheckError } from './sandbox-verdict';

/** The inputs' types are inferred from their schemas (src/contract/inputs.ts). */
export type { DeleteToolInput, DeployToolInput, RollbackToolInput } from './inputs';

/**
 * The steps of a tool deployment, in order; `typecheck` runs the TypeScript checker (FORGE_TYPECHECK), `commit`
 * persists the version and activates it in one transaction.
 */
export const DEPLOY_STAGES = ['validate', 'compile', 'typecheck', 'test', 'commit', 'notify'] as const;
export type DeployStage = (typeof DEPLOY_STAGES)[number];

/** Identity of a submission: (name, source, test input, description) hashed by the client and checked by the worker. */
export interface DeployToolWorkflowInput extends DeployToolInput {
  contentHash: string;
}

/** A sandbox verdict as carried in workflow histories: no output (it may be large), everything an agent acts on. */
export interface VerdictSummary {
  status: SandboxStatus;
  durationMs: number;
  error?: string;
  stderrTail?: string;
  diagnostics?: SandboxDiagnostics;
}

/**
 * A deployment's test where its workflow task runs: the verdict, or `busy` when that worker had no free sandbox slot
 * (the test then goes to the sandbox queue).
 */
export type TestHereResult = { verdict: VerdictSummary; busy?: never } | { busy: true; verdict?: never };

export interface DeployDiagnostics {
  /** The stage that decided the outcome (for `active`, the last one). */
  stage: DeployStage;
  /** One sentence: why it was rejected, or what happened. */
  message: string;
  /** The sandbox verdict, when the test ran. */
  sandbox?: VerdictSummary;
  /** Compile errors with line and column, when compiling failed. */
  compileErrors?: { message: string; location?: { file: string; line: number; column: number; lineText?: string } }[];
  /**
   * Type errors with location and TS code: why a run was rejected at `typecheck`, or, with FORGE_TYPECHECK=warn, what
   * the checker found in a version that went on to deploy.
   */
  typeErrors?: TypeCheckError[];
  /** The same records as the result's `steps`, under the name they had before (kept for existing readers; issue 29). */
  stages: StageRecord[];
}

/** CLI.md `forge deploy --json`. `verdict` is the sandbox status, or `refused` when validation stopped it earlier. */
export interface DeployToolResult {
  status: 'active' | 'rejected';
  name: string;
  version?: number;
  previousVersion?: number;
  /** True when the content was identical to the active version: nothing changed. */
  unchanged?: boolean;
  workflowId: string;
  /** The run's steps as its progress showed them (validate, compile, typecheck, test, commit, notify): every run result's `steps`. */
  steps: StageRecord[];
  verdict: SandboxStatus | 'refused';
  diagnostics: DeployDiagnostics;
}

export interface RollbackToolResult {
  status: 'active' | 'rejected';
  name: string;
  version?: number;
  previousVersion?: number;
  workflowId: string;
  message: string;
}

export interface DeleteToolResult {
  status: 'deleted' | 'rejected';
  name: string;
  previousVersion?: number;
  removedVersions?: number;
  workflowId: string;
  message: string;
}

export interface ToolSummary {
  name: string;
  /** null when quarantined: no version is active. */
  activeVersion: number | null;
  /**
   * `active`; `quarantined`: re-verification found every version failing and deactivated the tool; `degraded`:
   * re-verification made an older version active because the newest fails. A deployment (or a rollback) ends either.
   */
  status: 'active' | 'quarantined' | 'degraded';
  /** Where re-verification moved the tool: the version that failed, why, when, and the run. */
  reverification?: { failedVersion: number; reason: Record<string, unknown>; at: string; workflowId?: string };
  updatedAt: string;
  description?: string;
  contentHash: string;
  versions: number;
}

export interface ListToolsResult {
  tools: ToolSummary[];
}

/** Details of a `ToolRejected` failure. */
export interface ToolRejection {
  stage: DeployStage;
  verdict: SandboxStatus | 'refused';
  message: string;
  sandbox?: VerdictSummary;
  compileErrors?: DeployDiagnostics['compileErrors'];
  typeErrors?: TypeCheckError[];
}
