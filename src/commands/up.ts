import type { Command } from 'commander';
import path from 'node:path';
import { loadConfig } from '../config';
import { seedAgentRepo } from '../platform/agent-repo';
import { startPlatform, untilSignal } from '../platform/run-platform';
import { installForgeRuntime } from '../platform/telemetry';
import { ExitCode } from './exit-codes';

/**
 * `forge up`: the embedded platform in the foreground (dev server with its SQLite file under $FORGE_HOME, the
 * database, the workers); `forge worker`: workers only, against the configured Temporal and database. Ctrl-C (or
 * SIGTERM) stops everything that was started.
 */
export function registerUp(program: Command): void {
  program
    .command('up')
    .description('Start the embedded platform: Temporal dev server + Web UI, database, workers (Ctrl-C stops it all)')
    .action(async () => {
      const config = loadConfig();
      // With TEMPORAL_ADDRESS set, use that Temporal (CLI.md) instead of starting the dev server.
      const embeddedTemporal = !process.env.TEMPORAL_ADDRESS;
      // The default agent repository is seeded from examples/agent-repo the first time, so `forge promote` works at once.
      const seeded =
        config.promotion.repo === path.join(config.home, 'agent-repo')
          ? await seedAgentRepo({ target: config.promotion.repo, identity: config.promotion.identity })
          : 'existing';
      await runUntilSignal(config, embeddedTemporal, (p) => {
        const lines = [`Forge is up. Temporal at ${p.address}.`];
        if (p.uiUrl) lines.push(`Web UI: ${p.uiUrl}  (runs: ${p.uiUrl}/namespaces/default/workflows)`);
        lines.push(`agent-tools: ${config.agentToolsDir}`);
        lines.push(`agent repository (forge promote): ${config.promotion.repo}${seeded === 'created' ? ' (new: a copy of examples/agent-repo)' : ''}`);
        lines.push('Press Ctrl-C to stop.');
        process.stdout.write(lines.join('\n') + '\n');
      });
    });

  program
    .command('worker')
    .description('Run Forge workers against the configured Temporal (TEMPORAL_ADDRESS, ...) and database (DATABASE_URL)')
    .action(async () => {
      await runUntilSignal(loadConfig(), false, (p) => process.stdout.write(`Forge workers are running against ${p.address}. Press Ctrl-C to stop.\n`));
    });
}

async function runUntilSignal(
  config: ReturnType<typeof loadConfig>,
  embeddedTemporal: boolean,
  announce: (p: { address: string; uiUrl?: string }) => void,
): Promise<void> {
  // Before anything creates the Runtime: the SDK's INFO chatter stays out of the terminal, one line per run outcome,
  // and the Prometheus endpoint (Temporal's metrics and Forge's) comes up with it.
  const runtime = installForgeRuntime({ metrics: config.metrics });
  if (runtime.metricsAddress) process.stderr.write(`forge: Prometheus metrics at http://${runtime.metricsAddress}/metrics\n`);
  if (runtime.metricsUnavailable) {
    process.stderr.write(`forge: no metrics: ${runtime.metricsUnavailable}; set FORGE_METRICS_ADDRESS to another host:port (or off)\n`);
  }
  const signalled = untilSignal();
  const platform = await startPlatform({ config, embeddedTemporal });
  announce(platform);
  const ended = await Promise.race([signalled.then((s) => ({ signal: s })), platform.done.then(() => ({ signal: undefined }))]).catch(
    (err: Error) => ({ signal: undefined, error: err }),
  );
  if ('error' in ended && ended.error) process.stderr.write(`forge: a worker stopped: ${ended.error.message}\n`);
  else if (ended.signal) process.stderr.write(`forge: ${ended.signal}: stopping ...\n`);
  await platform.stop();
  process.stderr.write('forge: stopped.\n');
  process.exitCode = 'error' in ended && ended.error ? ExitCode.refused : ExitCode.ok;
}
