import type { ForgeKind } from './kinds';

/** One step of a run, as its progress and its result report it. */
export interface StageRecord {
  name: string;
  status: 'pending' | 'running' | 'done' | 'failed' | 'skipped';
  startedAt?: string;
  durationMs?: number;
  summary?: string;
}

/** What a run reports through its `progress` query (and, condensed, through its current details in the Web UI). */
export interface RunProgress {
  kind: ForgeKind;
  subject: string;
  stage: string;
  /** The run's steps, in order, each with its status: what every run's result also calls `steps`. */
  steps: StageRecord[];
  /**
   * The same records under the name progress reports had before results said `steps` (issue 29); kept because readers
   * of the JSON (`forge runs ID --json`, MCP get_run) may use it.
   * @deprecated read `steps`
   */
  stages: StageRecord[];
  outcome?: string;
}
