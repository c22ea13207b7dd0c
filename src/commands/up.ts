import type { Command } from 'commander';
import path from 'node:path';
import type * as ConfigModule from '../config';
import type * as DbModule from '../db';
import type * as RunWorkers from './run-workers';
import { agentRepoModule, configModule, dbModule, privateHomeModule, runWorkersModule } from './deferred';

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
      makeStatePrivate(config);
      const { seedAgentRepo } = agentRepoModule();
      // With TEMPORAL_ADDRESS set, use that Temporal (CLI.md) instead of starting the dev server.
      const embeddedTemporal = !process.env.TEMPORAL_ADDRESS;
      // The default agent repository is seeded from examples/agent-repo the first time, so `forge promote` works at once.
      const seeded =
        config.promotion.repo === path.join(config.home, 'agent-repo')
          ? await seedAgentRepo({ target: config.promotion.repo, identity: config.promotion.identity })
          : 'existing';
      const database = openDatabaseAhead(config);
      const { runUntilSignal } = workerSide();
      await runUntilSignal(
        config,
        embeddedTemporal,
        (p) => {
          const lines = [`Forge is up. Temporal at ${p.address}.`];
          if (p.uiUrl) lines.push(`Web UI: ${p.uiUrl}  (runs: ${p.uiUrl}/namespaces/default/workflows)`);
          lines.push(`agent-tools: ${config.agentToolsDir}`);
          lines.push(`agent repository (forge promote): ${config.promotion.repo}${seeded === 'created' ? ' (new: a copy of examples/agent-repo)' : ''}`);
          lines.push('Press Ctrl-C to stop.');
          process.stdout.write(lines.join('\n') + '\n');
        },
        database,
      );
    });

  program
    .command('worker')
    .description('Run Forge workers against the configured Temporal (TEMPORAL_ADDRESS, ...) and database (DATABASE_URL)')
    .action(async () => {
      const config = loadConfig();
      makeStatePrivate(config);
      const database = openDatabaseAhead(config);
      const { runUntilSignal } = workerSide();
      await runUntilSignal(config, false, (p) => process.stdout.write(`Forge workers are running against ${p.address}. Press Ctrl-C to stop.\n`), database);
    });
}

/** FORGE_HOME (and agent-tools/) private to this user, before the database, the dev server or a worker writes there. */
function makeStatePrivate(config: ConfigModule.ForgeConfig): void {
  privateHomeModule().makeStatePrivate(config, (line) => process.stderr.write(`${line}\n`));
}

/** Forge's configuration (zod and the schemas: ~90 ms), read only by the commands that need it. */
function loadConfig(): ConfigModule.ForgeConfig {
  return configModule().loadConfig();
}

/**
 * Starts opening the database before the worker side loads: embedded PGlite opens in a thread of its own (~0.6 s),
 * which then overlaps the ~0.35 s of loading @temporalio/worker and the platform, so a worker restarted after a crash
 * polls that much sooner. The promise is marked handled here; startPlatform awaits it and reports its failure.
 */
function openDatabaseAhead(config: ConfigModule.ForgeConfig): Promise<DbModule.ForgeDatabase> {
  const opening = dbModule().openDatabase(config);
  opening.catch(() => undefined);
  return opening;
}

/** The worker side, required only when `up` or `worker` runs (see run-workers.ts for why). */
function workerSide(): typeof RunWorkers {
  return runWorkersModule();
}
