import { inspect } from 'node:util';
import { IllegalStateError } from '@temporalio/common';
import { DefaultLogger, Runtime, type LogEntry } from '@temporalio/worker';
import { FAILURE_TYPES } from '../contract/failures';
import { ForgeMetric, OUTCOME_LOG_ATTRIBUTE, STAGE_DURATION_BUCKETS_MS } from '../contract/observability';
import { ConfigError } from '../config';
import { oneLine } from '../contract/one-line';

/** The longest outcome line printed; a compile error or a test's stderr can run to kilobytes. */
const MAX_OUTCOME_LINE = 400;

/**
 * What an operator reads in the `forge up` / `forge worker` terminal: one `forge: <workflow ID> <outcome> ...` line per
 * finished run (workflows log it through Progress.end), the SDK's warnings and errors with their stacks, and nothing
 * else. A verdict (a rejected tool, a refused migration or promotion) is an outcome, not a fault: the SDK's
 * `Activity failed` / `Workflow failed` warning for one of Forge's verdict failure types is dropped, since the
 * outcome line already says it in one line.
 */
export function terminalLogFunction(write: (text: string) => void = (text) => process.stderr.write(text)): (entry: LogEntry) => void {
  // Runs whose outcome line was printed: a refused run then fails (ForgeRunRefused, src/workflows/refusal.ts), and the
  // SDK's `Workflow failed` for it reaches here as a structured clone that has lost the failure's type.
  const outcomeSaid = new Set<string>();
  return ({ level, timestampNanos, message, meta }) => {
    if (meta && meta[OUTCOME_LOG_ATTRIBUTE] !== undefined) {
      write(`forge: ${oneLine(message, MAX_OUTCOME_LINE)}\n`);
      if (typeof meta.runId === 'string') {
        outcomeSaid.add(meta.runId);
        if (outcomeSaid.size > MAX_REMEMBERED_OUTCOMES) outcomeSaid.delete(outcomeSaid.values().next().value!);
      }
      return;
    }
    if (level !== 'WARN' && level !== 'ERROR') return;
    // The sandbox worker polls activities only, on purpose; the SDK warns about that at every start.
    if (message.startsWith('No workflows registered, not polling for workflow tasks')) return;
    if ((message === 'Activity failed' || message === 'Workflow failed') && verdictType(meta?.error) !== undefined) return;
    if (message === 'Workflow failed' && typeof meta?.runId === 'string' && outcomeSaid.delete(meta.runId)) return;
    const at = new Date(Number(timestampNanos / 1_000_000n)).toISOString();
    write(`${at} [${level}] ${message}${meta === undefined ? '' : ` ${inspect(meta, { breakLength: Infinity })}`}\n`);
  };
}

/** How many runs' outcome lines are remembered (a run's failure is logged right after its outcome line). */
const MAX_REMEMBERED_OUTCOMES = 1_000;

/** The Forge verdict type of an error or of any error in its cause chain (an ActivityFailure wraps the verdict). */
function verdictType(error: unknown): string | undefined {
  for (let e = error, depth = 0; e && typeof e === 'object' && depth < 5; e = (e as { cause?: unknown }).cause, depth++) {
    const type = (e as { type?: unknown }).type;
    if (typeof type === 'string' && (FAILURE_TYPES as readonly string[]).includes(type)) return type;
  }
  return undefined;
}

/** What installForgeRuntime did: whether this process's Runtime is Forge's, and where its metrics are served. */
export interface ForgeRuntime {
  installed: boolean;
  /** `host:port` of the Prometheus endpoint (`/metrics`), when one is served. */
  metricsAddress?: string;
  /** Why the default metrics address could not be used (the Runtime was installed without metrics). */
  metricsUnavailable?: string;
}

/**
 * Installs the process's Temporal Runtime for `forge up` / `forge worker`, before anything creates one: the terminal
 * logger above (INFO reaches it only so the outcome lines can; it drops the SDK's own INFO chatter) and, with
 * `metrics.address`, the Prometheus exporter that serves Temporal's runtime metrics and every metric Forge records
 * through the SDK's metric meter (workflow `metricMeter`, activity `Context.metricMeter`) on `/metrics`.
 *
 * A configured address that cannot be bound throws ConfigError naming FORGE_METRICS_ADDRESS; the default address taken
 * (another worker on this machine) installs the Runtime without metrics and says why. A Runtime that existed already
 * (the CLI embedded in a process that made one) is kept as it is: `installed: false`.
 */
export function installForgeRuntime(options: { metrics: { address?: string; configured: boolean }; write?: (text: string) => void }): ForgeRuntime {
  const logger = new DefaultLogger('INFO', terminalLogFunction(options.write));
  const { address, configured } = options.metrics;
  const install = (withMetrics: boolean): boolean => {
    try {
      Runtime.install({
        logger,
        telemetryOptions: {
          // Core's own warnings (Rust) go through the logger above too: by default Core printed them to the console
          // itself, with ANSI colour codes whether or not stderr is a terminal (raw escapes in a log file).
          logging: { filter: { core: 'WARN', other: 'WARN' }, forward: {} },
          ...(withMetrics && address
            ? {
                metrics: {
                  prometheus: { bindAddress: address, histogramBucketOverrides: { [ForgeMetric.stageDuration]: STAGE_DURATION_BUCKETS_MS } },
                },
              }
            : {}),
        },
      });
      return true;
    } catch (err) {
      if (err instanceof IllegalStateError) return false;
      throw err;
    }
  };
  if (!address) return { installed: install(false) };
  try {
    return install(true) ? { installed: true, metricsAddress: address } : { installed: false };
  } catch (err) {
    // Core's exporter could not bind (address in use, not an address of this machine).
    const why = (err as Error).message.replace(/^Failed to start prometheus metrics exporter: /, '');
    if (configured) {
      throw new ConfigError(`FORGE_METRICS_ADDRESS=${address} cannot serve metrics: ${why}`, 'FORGE_METRICS_ADDRESS', { cause: err });
    }
    return { installed: install(false), metricsUnavailable: `${address}: ${why}` };
  }
}
