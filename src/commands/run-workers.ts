import type { ForgeConfig } from '../config';
import type { ForgeDatabase } from '../db';
import { startPlatform, untilSignal } from '../platform/run-platform';
import { installForgeRuntime } from '../platform/telemetry';
import { ExitCode } from './exit-codes';

/*
 * The worker side of `forge up` and `forge worker`, loaded only when one of them runs: it pulls in
 * @temporalio/worker and the platform, which every other command (and every agent calling the CLI) does without.
 */

export async function runUntilSignal(
  config: ForgeConfig,
  embeddedTemporal: boolean,
  announce: (p: { address: string; uiUrl?: string }) => void,
  /** The database, already opening (see up.ts): it opens in a thread of its own while this module loads. */
  database?: Promise<ForgeDatabase>,
): Promise<void> {
  // Before anything creates the Runtime: the SDK's INFO chatter stays out of the terminal, one line per run outcome,
  // and the Prometheus endpoint (Temporal's metrics and Forge's) comes up with it.
  let runtime: ReturnType<typeof installForgeRuntime>;
  try {
    runtime = installForgeRuntime({ metrics: config.metrics });
  } catch (err) {
    await database?.then((d) => d.close()).catch(() => undefined);
    throw err;
  }
  if (runtime.metricsAddress) process.stderr.write(`forge: Prometheus metrics at http://${runtime.metricsAddress}/metrics\n`);
  if (runtime.metricsUnavailable) {
    process.stderr.write(`forge: no metrics: ${runtime.metricsUnavailable}; set FORGE_METRICS_ADDRESS to another host:port (or off)\n`);
  }
  const signalled = untilSignal();
  const platform = await startPlatform({ config, embeddedTemporal, database });
  announce(platform);
  const ended = await Promise.race([signalled.then((s) => ({ signal: s })), platform.done.then(() => ({ signal: undefined }))]).catch((err: Error) => ({
    signal: undefined,
    error: err,
  }));
  if ('error' in ended && ended.error) process.stderr.write(`forge: a worker stopped: ${ended.error.message}\n`);
  else if (ended.signal) process.stderr.write(`forge: ${ended.signal}: stopping ...\n`);
  await platform.stop();
  process.stderr.write('forge: stopped.\n');
  process.exitCode = 'error' in ended && ended.error ? ExitCode.refused : ExitCode.ok;
}
