import { defineQuery, log, metricMeter, setCurrentDetails, setHandler, upsertSearchAttributes, workflowInfo } from '@temporalio/workflow';
import type { SearchAttributeUpdatePair } from '@temporalio/common';
import type { ForgeKind } from '../contract/kinds';
import { ForgeMetric, OUTCOME_LOG_ATTRIBUTE, RUN_COUNTERS } from '../contract/observability';
import type { RunProgress, StageRecord } from '../contract/run-progress';
import { ForgeStageKey } from '../contract/search-attributes';

/** Every Forge workflow answers this query with where it is. */
export const progressQuery = defineQuery<RunProgress>('progress');

/**
 * A run's steps as the `progress` query and the Web UI's current details show them. Timestamps come from the
 * workflow clock, so replay produces the same records.
 */
export class Progress {
  private readonly steps: StageRecord[];
  private current = 'starting';
  private outcome: string | undefined;
  /** The last stage started, and the last sent as ForgeStage. */
  private reached: string | undefined;
  private upsertedStage: string | undefined;

  constructor(
    private readonly kind: ForgeKind,
    private readonly subject: string,
    stageNames: readonly string[],
  ) {
    this.steps = stageNames.map((name) => ({ name, status: 'pending' }));
    // The first stage, when the client set it at the start (deployments and migrations): the run upserts it no more.
    // Read from the run's start event, so a replay reads the same. A run continued as new inherits the attribute from
    // the run before it: that one is not a stage its client set.
    const info = workflowInfo();
    this.upsertedStage = info.continuedFromExecutionRunId === undefined ? info.typedSearchAttributes.get(ForgeStageKey) : undefined;
    setHandler(progressQuery, () => this.snapshot());
    this.publish();
  }

  start(name: string, summary?: string): void {
    this.begin(name, summary);
    // Visible in the Web UI's list and filterable (`ForgeStage = "test" AND ForgeOutcome = "rejected"`): the stage a
    // run is in, and after it ended the last it reached. Sent with the step's own command, no extra round trip; not
    // sent when the attribute already says so (a stage started again, or the one the client set at the start).
    if (name !== this.upsertedStage) {
      upsertSearchAttributes([{ key: ForgeStageKey, value: name }]);
      this.upsertedStage = name;
    }
  }

  /**
   * The ForgeStage upsert still owed by stages recorded with `ran`, to send with the run's outcome in one command.
   */
  pendingStage(): SearchAttributeUpdatePair[] {
    return this.reached !== undefined && this.reached !== this.upsertedStage ? [{ key: ForgeStageKey, value: this.reached }] : [];
  }

  done(name: string, summary?: string, durationMs?: number): void {
    this.finish(name, 'done', summary, durationMs);
  }

  /**
   * Records a stage that ran inside another step's activity, with the time that activity measured for it. It upserts
   * no ForgeStage: nothing outside the run can see it before the next command, and every upsert is an event the server
   * writes before the run goes on (~1 ms each, measured 2026-11-27). The last stage reached goes with the outcome
   * instead (`pendingStage`).
   */
  ran(name: string, durationMs: number, summary?: string): void {
    this.begin(name, summary);
    this.finish(name, 'done', summary, durationMs);
  }

  failed(name: string, summary?: string): void {
    this.finish(name, 'failed', summary);
  }

  /** Marks every stage not yet started as skipped (a rejection or a no-op ends the run early). */
  skipRest(): void {
    for (const s of this.steps) if (s.status === 'pending') s.status = 'skipped';
    this.publish();
  }

  /**
   * The run ended as `outcome`: the remaining stages are skipped, the outcome is counted, and one line says so in the
   * worker's log (`<workflow ID> rejected at test (failed): <message>`). `note.at` names the stage a rejection is
   * about when it is not the stage marked failed (a compile error found inside the validate step); without a
   * message, the failed stage's summary is used. Metrics and logs from workflow code are not recorded on replay.
   */
  end(outcome: string, note: { at?: string; verdict?: string; message?: string } = {}): void {
    this.outcome = outcome;
    this.current = 'finished';
    this.skipRest();
    const failed = this.steps.find((s) => s.status === 'failed');
    const at = note.at ?? failed?.name;
    const message = note.message ?? failed?.summary;
    const line = `${workflowInfo().workflowId} ${outcome}${at ? ` at ${at}` : ''}${note.verdict ? ` (${note.verdict})` : ''}${message ? `: ${message}` : ''}`;
    log.info(line, { [OUTCOME_LOG_ATTRIBUTE]: outcome, forgeKind: this.kind, forgeSubject: this.subject });
    const counter = RUN_COUNTERS[this.kind];
    if (counter) metricMeter.createCounter(counter, 'runs', `Forge ${this.kind} runs by outcome`).add(1, { outcome });
  }

  records(): StageRecord[] {
    return this.steps.map((s) => ({ ...s }));
  }

  snapshot(): RunProgress {
    const steps = this.records();
    // `stages`: the same records under the old name, for readers of the progress JSON from before `steps`.
    return { kind: this.kind, subject: this.subject, stage: this.current, steps, stages: steps, outcome: this.outcome };
  }

  private finish(name: string, status: 'done' | 'failed', summary?: string, durationMs?: number): void {
    const stage = this.stage(name);
    stage.status = status;
    if (durationMs !== undefined) stage.durationMs = durationMs;
    else if (stage.startedAt) stage.durationMs = Date.now() - Date.parse(stage.startedAt);
    if (summary) stage.summary = summary;
    this.publish();
    if (stage.durationMs !== undefined) {
      metricMeter
        .createHistogram(ForgeMetric.stageDuration, 'int', 'ms', 'Duration of each stage of a Forge run')
        .record(Math.max(0, Math.round(stage.durationMs)), { kind: this.kind, stage: name, status });
    }
  }

  private begin(name: string, summary?: string): void {
    const stage = this.stage(name);
    stage.status = 'running';
    stage.startedAt = new Date(Date.now()).toISOString();
    if (summary) stage.summary = summary;
    this.current = name;
    this.reached = name;
    this.publish();
  }

  private stage(name: string): StageRecord {
    const stage = this.steps.find((s) => s.name === name);
    if (!stage) throw new Error(`unknown stage ${name} in ${workflowInfo().workflowType}`);
    return stage;
  }

  /** The Web UI's "current details": one markdown line per stage. */
  private publish(): void {
    const icon: Record<StageRecord['status'], string> = { pending: '·', running: '▶', done: '✓', failed: '✗', skipped: '–' };
    const lines = this.steps.map(
      (s) => `${icon[s.status]} **${s.name}**${s.durationMs !== undefined ? ` (${s.durationMs} ms)` : ''}${s.summary ? `: ${s.summary}` : ''}`,
    );
    if (this.outcome) lines.push(`**outcome:** ${this.outcome}`);
    setCurrentDetails(lines.join('\n'));
  }
}
