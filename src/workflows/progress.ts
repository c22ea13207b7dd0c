import { defineQuery, log, metricMeter, patched, setCurrentDetails, setHandler, upsertSearchAttributes, workflowInfo } from '@temporalio/workflow';
import type { SearchAttributeUpdatePair } from '@temporalio/common';
import type { ForgeKind } from '../contract/kinds';
import { ForgeMetric, OUTCOME_LOG_ATTRIBUTE, RUN_COUNTERS } from '../contract/observability';
import type { RunProgress, StageRecord } from '../contract/run-progress';
import { ForgeStageKey } from '../contract/search-attributes';

/**
 * The patch that made each stage's start upsert the ForgeStage search attribute (a command: runs started before it
 * replay without these upserts).
 */
export const STAGE_SEARCH_ATTRIBUTE = 'forge-stage-search-attribute';

/** Every Forge workflow answers this query with where it is. */
export const progressQuery = defineQuery<RunProgress>('progress');

/**
 * A run's stages as the `progress` query and the Web UI's current details show them. Timestamps come from the
 * workflow clock, so replay produces the same records.
 */
export class Progress {
  private readonly stages: StageRecord[];
  private current = 'starting';
  private outcome: string | undefined;
  /** The last stage started, and the last sent as ForgeStage. */
  private reached: string | undefined;
  private upsertedStage: string | undefined;
  private readonly startedWithStage: boolean;
  private stageUpserts: boolean | undefined;
  private coalescing = false;

  constructor(
    private readonly kind: ForgeKind,
    private readonly subject: string,
    stageNames: readonly string[],
  ) {
    this.stages = stageNames.map((name) => ({ name, status: 'pending' }));
    // Set by the client at the start (deployments and migrations since 2026-11-27), read from the run's start event,
    // so a replay reads the same. A run continued as new inherits the attribute from the run before it: that one is
    // not a stage its client set (re-verification's continued runs upsert their stages through the patch).
    const info = workflowInfo();
    const atStart = info.continuedFromExecutionRunId === undefined ? info.typedSearchAttributes.get(ForgeStageKey) : undefined;
    this.upsertedStage = atStart;
    this.startedWithStage = atStart !== undefined;
    setHandler(progressQuery, () => this.snapshot());
    this.publish();
  }

  start(name: string, summary?: string): void {
    this.begin(name, summary);
    // Visible in the Web UI's list and filterable (`ForgeStage = "test" AND ForgeOutcome = "rejected"`): the stage a
    // run is in, and after it ended the last it reached. Sent with the step's own command, no extra round trip.
    if (this.upsertsStages() && !((this.coalescing || this.startedWithStage) && name === this.upsertedStage)) {
      upsertSearchAttributes([{ key: ForgeStageKey, value: name }]);
      this.upsertedStage = name;
    }
  }

  /**
   * From now on a stage recorded with `ran` (it ran inside another step) upserts no ForgeStage: nothing outside the
   * run can see it before the next command, and every upsert is an event the server writes before the run goes on
   * (~1 ms each, measured 2026-11-27). The last stage reached goes with the outcome instead (`pendingStage`). Turned
   * on by runs whose recorded shape says so, so that older histories replay with an upsert per stage.
   */
  coalesceStageUpserts(): void {
    this.coalescing = true;
  }

  /** The ForgeStage upsert still owed (see coalesceStageUpserts), to send with the run's outcome in one command. */
  pendingStage(): SearchAttributeUpdatePair[] {
    return this.coalescing && this.reached !== undefined && this.reached !== this.upsertedStage ? [{ key: ForgeStageKey, value: this.reached }] : [];
  }

  done(name: string, summary?: string, durationMs?: number): void {
    this.finish(name, 'done', summary, durationMs);
  }

  /** Records a stage that ran inside another step's activity, with the time that activity measured for it. */
  ran(name: string, durationMs: number, summary?: string): void {
    if (this.coalescing) this.begin(name, summary);
    else this.start(name, summary);
    this.finish(name, 'done', summary, durationMs);
  }

  failed(name: string, summary?: string): void {
    this.finish(name, 'failed', summary);
  }

  /** Marks every stage not yet started as skipped (a rejection or a no-op ends the run early). */
  skipRest(): void {
    for (const s of this.stages) if (s.status === 'pending') s.status = 'skipped';
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
    const failed = this.stages.find((s) => s.status === 'failed');
    const at = note.at ?? failed?.name;
    const message = note.message ?? failed?.summary;
    const line = `${workflowInfo().workflowId} ${outcome}${at ? ` at ${at}` : ''}${note.verdict ? ` (${note.verdict})` : ''}${message ? `: ${message}` : ''}`;
    log.info(line, { [OUTCOME_LOG_ATTRIBUTE]: outcome, forgeKind: this.kind, forgeSubject: this.subject });
    const counter = RUN_COUNTERS[this.kind];
    if (counter) metricMeter.createCounter(counter, 'runs', `Forge ${this.kind} runs by outcome`).add(1, { outcome });
  }

  records(): StageRecord[] {
    return this.stages.map((s) => ({ ...s }));
  }

  snapshot(): RunProgress {
    return { kind: this.kind, subject: this.subject, stage: this.current, stages: this.records(), outcome: this.outcome };
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

  /**
   * Whether this run upserts ForgeStage: a run that started with one (its client sets the first stage) always does,
   * without the patch, which would cost it a marker and the SDK's TemporalChangeVersion upsert; any other asks the
   * patch, at its first stage as before, so older histories replay alike.
   */
  private upsertsStages(): boolean {
    this.stageUpserts ??= this.startedWithStage || patched(STAGE_SEARCH_ATTRIBUTE);
    return this.stageUpserts;
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
    const stage = this.stages.find((s) => s.name === name);
    if (!stage) throw new Error(`unknown stage ${name} in ${workflowInfo().workflowType}`);
    return stage;
  }

  /** The Web UI's "current details": one markdown line per stage. */
  private publish(): void {
    const icon: Record<StageRecord['status'], string> = { pending: '·', running: '▶', done: '✓', failed: '✗', skipped: '–' };
    const lines = this.stages.map(
      (s) => `${icon[s.status]} **${s.name}**${s.durationMs !== undefined ? ` (${s.durationMs} ms)` : ''}${s.summary ? `: ${s.summary}` : ''}`,
    );
    if (this.outcome) lines.push(`**outcome:** ${this.outcome}`);
    setCurrentDetails(lines.join('\n'));
  }
}
