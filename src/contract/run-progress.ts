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
  stages: StageRecord[];
  outcome?: string;
}
