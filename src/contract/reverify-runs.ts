import type { FailureCategory, StageReport } from './promotion-runs';
import type { SandboxStatus } from './sandbox-verdict';

/** The Temporal Schedule that runs re-verification (created or updated when the platform starts). */
export const REVERIFY_SCHEDULE_ID = 'forge-reverify';
/** Prefix of the workflow IDs the schedule starts (Temporal appends the scheduled time). */
export const REVERIFY_WORKFLOW_ID_PREFIX = 'tool-reverify';
/** Tools per batch: each batch ends in continue-as-new, so one history holds at most this many tools' tests. */
export const DEFAULT_REVERIFY_BATCH_SIZE = 100;
/** The run's summary lists every tool up to this many; past it, only the tools something happened to. */
export const REVERIFY_SUMMARY_MAX_TOOLS = 2_000;

/**
 * What a run did about a tool: `none` (passed), `flaky` (failed, then passed when tested again at once: reported,
 * not acted on), `quarantined` (failed twice and no earlier version passes: nothing active), `degraded` (an earlier
 * version that passes is active now), `superseded` (failed, but the tool was moved meanwhile: left alone), `error`
 * (the test could not be run; nothing acted on).
 */
export const REVERIFY_ACTIONS = ['none', 'flaky', 'quarantined', 'degraded', 'superseded', 'error'] as const;
export type ReverifyAction = (typeof REVERIFY_ACTIONS)[number];

/** A test's verdict in a re-verification: a sandbox status, or `error` when the test could not be run. */
export type ReverifyVerdict = SandboxStatus | 'error';

/** The input of ReverifyToolsWorkflow; everything is optional (the schedule starts it with `{}`). */
export interface ReverifyToolsInput {
  /** How the run started: the schedule, or `forge reverify --now`. */
  trigger?: 'schedule' | 'now';
  /** Tools per batch (default {@link DEFAULT_REVERIFY_BATCH_SIZE}). */
  batchSize?: number;
  /** Carried across continue-as-new: the run's key (its first run ID), where the next batch starts, batches done. */
  runKey?: string;
  after?: string;
  batches?: number;
  /** Also re-verify the built-in repository's branch (default true; a run without a repository reports it skipped). */
  builtin?: boolean;
}

/**
 * What re-verification found of the built-in repository's branch (FORGE_BUILTIN_REPO): the promotion stages run on
 * its current head in a fresh worktree, nothing merged or moved. A failure is reported here, never acted on.
 * `skipped`: there is no repository (or no branch checked out); `error`: the machinery failed (retries spent).
 */
export interface BuiltinReverifyReport {
  status: 'passed' | 'failed' | 'skipped' | 'error';
  repo: string;
  branch?: string;
  /** The head commit verified. */
  commit?: string;
  /** Why it was skipped, failed or could not run. */
  reason?: string;
  /** Each stage as it ended (a stage after the failing one is `skipped`), the promotion envelope's reports. */
  stages: StageReport[];
  /** The failure's envelope: the stage, the command that decided, its exit code and its output's tails. */
  failure?: {
    category: FailureCategory;
    stage: string;
    reason: string;
    command: string[];
    exitCode: number | null;
    stdoutTail: string;
    stderrTail: string;
  };
}

/** One tool in a run's summary: the active version tested, its verdict and what the run did. */
export interface ReverifiedTool {
  name: string;
  version: number;
  verdict: ReverifyVerdict;
  action: ReverifyAction;
  /** The version active after the run, where the run moved it (degraded). */
  activeVersion?: number;
  durationMs: number;
  error?: string;
}

/** The result of ReverifyToolsWorkflow (`forge reverify --now --json`). */
export interface ReverifySummary {
  runKey: string;
  workflowId: string;
  /** Every tool tested (up to {@link REVERIFY_SUMMARY_MAX_TOOLS}; past it only the ones with an action). */
  tools: ReverifiedTool[];
  /** Names quarantined by this run (no version active). */
  quarantined: string[];
  /** Names degraded by this run (an earlier version active). */
  degraded: string[];
  /** Names that failed once and passed on the immediate retest. */
  flaky: string[];
  counts: { tested: number; passed: number; failed: number; batches: number };
  truncated: boolean;
  /** The built-in repository's branch, verified on its head (absent when the run was asked not to). */
  builtin?: BuiltinReverifyReport;
}

/** What `forge reverify` shows of the schedule. */
export interface ReverifyScheduleInfo {
  scheduleId: string;
  /** The configured interval, in milliseconds. */
  intervalMs: number;
  paused: boolean;
  note?: string;
  nextRuns: string[];
  /** The newest run the schedule started: its ID, when, and its summary's counts once it has ended. */
  lastRun?: {
    workflowId: string;
    startedAt: string;
    status: string;
    summary?: Pick<ReverifySummary, 'quarantined' | 'degraded' | 'flaky' | 'counts' | 'builtin'>;
  };
  running: string[];
}
