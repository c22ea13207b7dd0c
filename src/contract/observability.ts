import type { ForgeKind } from './kinds';

/**
 * Forge's own metrics, as the worker's Prometheus endpoint (FORGE_METRICS_ADDRESS, `/metrics`) exports them beside
 * Temporal's `temporal_*` runtime metrics. Workflows and activities record them through the SDK's metric meter, so
 * one exporter serves both, and a replayed workflow records nothing twice.
 */
export const ForgeMetric = {
  /** Histogram of every stage of a run, in milliseconds, by `kind`, `stage` and `status` (done, failed). */
  stageDuration: 'forge_stage_duration_ms',
  /** Counter of sandbox test runs, by `status` (the verdict: passed, failed, timeout, ...). */
  sandboxVerdicts: 'forge_sandbox_verdicts_total',
  /** Counter of tools re-verification moved, by `state` (quarantined: nothing active; degraded: an older version). */
  quarantines: 'forge_quarantines_total',
} as const;

/** The counter on which each kind of run counts how it ended (label `outcome`: active, rejected, applied, ...). */
export const RUN_COUNTERS: Partial<Record<ForgeKind, string>> = {
  deploy: 'forge_deployments_total',
  rollback: 'forge_rollbacks_total',
  delete: 'forge_deletions_total',
  migrate: 'forge_migrations_total',
  promote: 'forge_promotions_total',
  reverify: 'forge_reverifications_total',
  pay: 'forge_payments_total',
};

/** Bucket boundaries (ms) for stage durations: millisecond steps up to five-minute promotion stages. */
export const STAGE_DURATION_BUCKETS_MS = [5, 10, 25, 50, 100, 250, 500, 1_000, 2_500, 5_000, 10_000, 30_000, 60_000, 120_000, 300_000];

/**
 * The log attribute that marks a workflow's one outcome line (`forge: <workflow ID> rejected at test (failed): ...`):
 * the terminal logger of `forge up` / `forge worker` prints these whatever their level, and nothing else below WARN.
 */
export const OUTCOME_LOG_ATTRIBUTE = 'forgeOutcome';
