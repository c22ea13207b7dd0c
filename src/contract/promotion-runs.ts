/**
 * Inputs and results of the built-in promotion workflow (CLI.md `forge promote`): plain JSON, shared by the client,
 * the activities and the workflow.
 */
import type { PromoteBuiltinInput } from './inputs';
import type { StageRecord } from './run-progress';

/** The stages a promotion verifies a change with, in order (the plan file's names). */
export const PROMOTION_STAGES = ['compile', 'targetedTests', 'startupSmoke'] as const;
export type PromotionStage = (typeof PROMOTION_STAGES)[number];

/** The steps of a promotion run as its progress shows them. */
export const PROMOTE_STEPS = ['workspace', 'apply', ...PROMOTION_STAGES, 'merge', 'cleanup'] as const;
export type PromoteStep = (typeof PROMOTE_STEPS)[number];

export { MAX_PROMOTION_BYTES, MAX_PROMOTION_FILES } from './limits';
/** The input's types are inferred from its schema (src/contract/inputs.ts): one file of a change, and the promotion. */
export type { PromoteBuiltinInput, ProposedChange } from './inputs';

/** What the client starts the workflow with: the input, resolved (absolute repo, a message). */
export interface PromoteBuiltinWorkflowInput extends PromoteBuiltinInput {
  repo: string;
  message: string;
  dryRun: boolean;
  /** The shared promotion task queue (the client's configuration): the run's first step goes there. */
  promoteQueue: string;
}

/** How a stage ended (CLI.md's envelope). */
export type StageStatus = 'pass' | 'fail' | 'timeout' | 'error' | 'skipped';

/** Where a compiler or test runner said the problem is. */
export interface StageLocation {
  file: string;
  line: number;
  column?: number;
  message: string;
}

/** One command of a stage, as it ended. */
export interface StageCommandReport {
  argv: string[];
  status: Exclude<StageStatus, 'skipped'>;
  exitCode: number | null;
  /** The signal that ended it, when one did. */
  signal: string | null;
  durationMs: number;
  /** Why it did not pass. */
  reason?: string;
}

/** One stage of the verification envelope. */
export interface StageReport {
  name: PromotionStage;
  status: StageStatus;
  /**
   * The argv of the last command the stage ran: the one that decided (a stage stops at its first command that does
   * not pass). `exitCode`, the tails and `locations` are that command's too; `commands` has them all.
   */
  command: string[];
  cwd: string;
  exitCode: number | null;
  durationMs: number;
  stdoutTail: string;
  stderrTail: string;
  resource: { maxRssBytes: number; cpuUserMicros: number };
  /** file:line:col the tools printed, when they printed any. */
  locations?: StageLocation[];
  /** One sentence: why the stage did not pass (timeout, memory, output flood, signal, ...). */
  reason?: string;
  /** Every command the stage ran, in order (the plan may give a stage several). */
  commands?: StageCommandReport[];
}

/**
 * Why a promotion failed: a stage's verdict (compile, test, startup, timeout), the machinery (infra), or a refusal
 * before or instead of verification (refused: an unmapped or unsafe path, a bad plan, a conflict with the branch,
 * local changes in the live checkout).
 */
export type FailureCategory = 'compile' | 'test' | 'startup' | 'timeout' | 'infra' | 'refused';

/** Details of a `PromotionRejected` failure. */
export interface PromotionRejection {
  category: FailureCategory;
  /** The step or stage that refused (`plan`, `workspace`, `apply`, a stage name, `merge`). */
  stage: string;
  reason: string;
  /** The stage's report, when a stage decided. */
  report?: StageReport;
}

/** CLI.md's verification envelope. */
export interface VerificationEnvelope {
  runId: string;
  overall: 'pass' | 'fail' | 'error' | 'timeout';
  workspace: { path: string; isolated: boolean };
  /** When the run started and how long it took; each step's time is in the result's `steps`. */
  timing: { startedAt: string; durationMs: number };
  stages: StageReport[];
  failure?: { category: FailureCategory; reason: string; stage: string };
}

/** CLI.md `forge promote --json`. `verified`: a dry run that passed. */
export interface PromoteBuiltinResult {
  status: 'promoted' | 'rejected' | 'verified';
  workflowId: string;
  repo: string;
  branch: string;
  baseCommit: string;
  /** The commit the branch points at now (promoted), the tested commit (verified). */
  mergedCommit?: string;
  /** How many times the change was verified: more than one when the branch moved and it was rebased. */
  rounds: number;
  message: string;
  diagnostics: VerificationEnvelope;
  /** The run's steps as its progress showed them (workspace, apply, the stages, merge, cleanup). */
  steps: StageRecord[];
}

/** A stage that did not run because an earlier one decided (a promotion's and a built-in re-verification's report). */
export function skippedStage(name: StageReport['name']): StageReport {
  return {
    name,
    status: 'skipped',
    command: [],
    cwd: '',
    exitCode: null,
    durationMs: 0,
    stdoutTail: '',
    stderrTail: '',
    resource: { maxRssBytes: 0, cpuUserMicros: 0 },
  };
}
