import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { ForgeClient } from '../src/client';
import { loadConfig, type ForgeConfig } from '../src/config';
import { openDatabase, type ForgeDatabase } from '../src/db';
import { startDevServer } from '../src/platform/dev-server';
import { findFreePort } from '../src/process/free-port';
import { connectWorkerConnection } from '../src/platform/worker-connection';
import { createForgeWorkers, type ForgeWorkers } from '../src/worker';

/** What a benchmark measures against: a dev server, embedded PGlite (or a PostgreSQL) and the workers, under /dev/shm. */
export interface BenchPlatform {
  config: ForgeConfig;
  database: ForgeDatabase;
  workers: ForgeWorkers;
  forge: ForgeClient;
  /** The dev server's address. */
  address: string;
  stop(): Promise<void>;
}

/** Levers measured off and on (BENCHMARKS.md): the platform gets the bench's own setting of each. */
function leversFromEnv(): Record<string, string> {
  const levers: Record<string, string> = {};
  for (const name of ['FORGE_SANDBOX_PRELOAD', 'FORGE_SANDBOX_SNAPSHOT']) {
    const value = process.env[name];
    if (value) levers[name] = value;
  }
  return levers;
}

/**
 * Starts the whole platform the way `forge up` does, in a private state directory that stop() removes. `env` adds to
 * the configuration's environment: `DATABASE_URL` puts Forge on that PostgreSQL instead of embedded PGlite.
 */
export async function startBenchPlatform(label: string, env: Record<string, string> = {}): Promise<BenchPlatform> {
  const base = existsSync('/dev/shm') ? '/dev/shm' : tmpdir();
  const home = mkdtempSync(path.join(base, `forge-bench-${label}-`));
  const [port, uiPort] = [await findFreePort(), await findFreePort()];
  const config = loadConfig({
    FORGE_HOME: home,
    FORGE_AGENT_TOOLS_DIR: path.join(home, 'agent-tools'),
    FORGE_TEMPORAL_PORT: String(port),
    FORGE_UI_PORT: String(uiPort),
    ...leversFromEnv(),
    ...env,
  });
  const server = await startDevServer({ home, port, uiPort });
  const { connection, namespace } = await connectWorkerConnection({ address: server.address, namespace: server.namespace });
  const database = await openDatabase(config);
  const workers = await createForgeWorkers({ config, connection, namespace, database, log: () => undefined });
  const running = workers.run();
  const forge = await ForgeClient.connect({ address: server.address, namespace: server.namespace });
  return {
    config,
    database,
    workers,
    forge,
    address: server.address,
    async stop() {
      await forge.close();
      await workers.shutdown();
      await running.catch(() => undefined);
      await database.close();
      await connection.close();
      await server.stop();
      rmSync(home, { recursive: true, force: true });
    },
  };
}

/**
 * The platform as users run it: `forge up` in its own process (dev server, database, workers), and a client here —
 * an agent is never the process that holds the workers. stop() sends SIGINT and waits for everything to end.
 */
export async function startPlatformProcess(
  label: string,
  /** `home`: start on this FORGE_HOME (a restart) and leave it in place at stop; `env`: more of the platform's settings. */
  options: { home?: string; env?: Record<string, string> } = {},
): Promise<{
  config: ForgeConfig;
  forge: ForgeClient;
  /** The `forge up` process. */ pid: number;
  /** Its Temporal. */ address: string;
  stop(): Promise<void>;
}> {
  const base = existsSync('/dev/shm') ? '/dev/shm' : tmpdir();
  const home = options.home ?? mkdtempSync(path.join(base, `forge-bench-${label}-`));
  const [port, uiPort] = [await findFreePort(), await findFreePort()];
  const env = {
    PATH: process.env.PATH,
    FORGE_HOME: home,
    FORGE_AGENT_TOOLS_DIR: path.join(home, 'agent-tools'),
    FORGE_TEMPORAL_PORT: String(port),
    FORGE_UI_PORT: String(uiPort),
    ...leversFromEnv(),
    ...options.env,
  };
  const config = loadConfig(env);
  const child = spawn(process.execPath, [path.join(__dirname, '..', '..', 'bin', 'forge.js'), 'up'], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  await new Promise<void>((resolve, reject) => {
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      if (output.includes('Forge is up')) resolve();
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.once('exit', (code) => reject(new Error(`forge up exited (${code}):\n${output}`)));
  });
  const forge = await ForgeClient.connect({ address: `127.0.0.1:${port}` });
  return {
    config,
    forge,
    pid: child.pid!,
    address: `127.0.0.1:${port}`,
    async stop() {
      await forge.close();
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGINT');
      await exited;
      if (!options.home) rmSync(home, { recursive: true, force: true });
    },
  };
}
