import { Client } from '@temporalio/client';
import type { NativeConnection } from '@temporalio/worker';
import type { ForgeConfig } from '../config';
import { openDatabase, type ForgeDatabase } from '../db';
import type * as WorkerModule from '../worker';
import { attemptsDirOf, handBackDeadWorkersAttempts } from './attempt-ledger';
import { createControlWorkerAhead } from './control-worker';
import { startDevServer, type DevServer } from './dev-server';
import { tightenTree } from './private-home';
import { ensureTemporalBinary } from './temporal-binary';
import type { TemporalConnectOptions } from './temporal-connection';
import { connectWorkerConnection } from './worker-connection';

/** The workers' modules (activities, sandbox, registry): see where startPlatform loads them, and why then. */
// eslint-disable-next-line @typescript-eslint/no-require-imports
const workerModule = (): typeof WorkerModule => require('../worker');

export interface PlatformOptions {
  config: ForgeConfig;
  /** Start the embedded Temporal dev server (forge up), or connect to the configured one (forge worker). */
  embeddedTemporal: boolean;
  /** The database, already opening (a worker restarted after a crash opens it while its modules load); else opened here. */
  database?: Promise<ForgeDatabase>;
  /** Where to connect without the dev server (default: the standard environment configuration of this process). */
  temporal?: TemporalConnectOptions;
  log?: (line: string) => void;
}

/** A running platform: stop() takes down everything it started, in reverse order, and resolves once all is gone. */
export interface RunningPlatform {
  address: string;
  uiUrl?: string;
  /**
   * The workers' connection and its namespace. A Client built on it shares it, which is what lets a start be eager (the
   * server hands the first workflow task straight back to this process's worker). Closed by stop(), after the workers.
   */
  connection: NativeConnection;
  namespace: string;
  /** Resolves when the workers stop (after stop(), or on a fatal worker error, which it rethrows). */
  done: Promise<void>;
  stop(): Promise<void>;
}

/**
 * Starts what `forge up` (embedded) or `forge worker` needs: the dev server if asked, the database (migrated), and
 * the workers. Whatever was started before a step fails is stopped again before the error is thrown.
 */
export async function startPlatform(options: PlatformOptions): Promise<RunningPlatform> {
  const { config } = options;
  const log = options.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  const undo: (() => Promise<void>)[] = [];
  const stopAll = async () => {
    for (const step of undo.reverse()) await step().catch((err: Error) => log(`forge: while stopping: ${err.message}`));
    undo.length = 0;
  };
  // The database opens first (or is already opening: see up.ts), in its own thread, while the dev server starts and the
  // connection is made; it is closed last, whatever fails. Its failure is reported where it is awaited below.
  const db = config.database;
  log(`forge: opening the database (${db.kind === 'postgres' ? 'PostgreSQL from DATABASE_URL' : `embedded PGlite in ${db.dataDir}`}) ...`);
  const opening = options.database ?? openDatabase(config);
  opening.catch(() => undefined);
  undo.push(() =>
    opening.then(
      (d) => d.close(),
      () => undefined,
    ),
  );
  try {
    let server: DevServer | undefined;
    if (options.embeddedTemporal) {
      // Installed here if setup never ran (a program that embeds Forge, `npx forge up` in a fresh project).
      const binary = await ensureTemporalBinary({ env: options.temporal?.env, home: config.home, log });
      log(`forge: starting the Temporal dev server (state in ${config.home}) ...`);
      server = await startDevServer({ home: config.home, port: config.temporal.port, uiPort: config.temporal.uiPort, binary });
      undo.push(() => server!.stop());
    }
    const { connection, namespace, address } = await connectWorkerConnection(
      server ? { ...options.temporal, address: server.address, namespace: server.namespace } : (options.temporal ?? {}),
    );
    undo.push(() => connection.close());
    // First, while the database opens: the attempts a dead worker of this host left are retried the sooner.
    const handedBack = handBackDeadWorkersAttempts(attemptsDirOf(config.home), new Client({ connection, namespace })).then((r) => {
      if (r.attempts.length > 0) log(`forge: handed back ${r.attempts.length} attempt(s) a dead worker of this host was running: ${r.attempts.join('; ')}`);
      for (const e of r.errors) log(`forge: could not hand back ${e} (its heartbeat timeout will)`);
    });
    await handedBack;
    // The workers' modules (the activities, the sandbox, the registry) load only now: a worker restarted after a crash
    // races each killed attempt's heartbeat timeout (3 s) with its hand-back, which needs only the connection, and on a
    // loaded machine every module loaded before it widens the gap.
    const { createForgeWorkers } = workerModule();
    // The control worker's workflow thread loads the workflow bundle while the database finishes opening.
    const control = createControlWorkerAhead({ config, connection, namespace, log });
    const database = await opening.catch(async (err: unknown) => {
      await control.discard();
      throw err;
    });
    // A new PGlite directory holds PGlite's initdb image, files of mode 0666: private now, as everything under FORGE_HOME.
    if (db.kind === 'pglite') tightenTree(db.dataDir);
    const workers = await createForgeWorkers({ config, connection, namespace, database, log, control });
    const done = workers.run();
    undo.push(async () => {
      await workers.shutdown();
      await done.catch(() => undefined);
    });
    log(
      `forge: workers polling ${config.taskQueues.control} and ${config.taskQueues.sandbox} (sandbox concurrency ${config.sandbox.concurrency}, ${config.sandbox.spares} spare process(es) started ahead) on ${address}, namespace ${namespace}`,
    );
    return { address, uiUrl: server?.uiUrl, connection, namespace, done, stop: stopAll };
  } catch (err) {
    await stopAll();
    throw err;
  }
}

/** Resolves on the first SIGINT or SIGTERM (Ctrl-C, `kill`, a container stop). */
export function untilSignal(): Promise<NodeJS.Signals> {
  return new Promise((resolve) => {
    const on = (signal: NodeJS.Signals) => {
      process.off('SIGINT', on);
      process.off('SIGTERM', on);
      resolve(signal);
    };
    process.on('SIGINT', on);
    process.on('SIGTERM', on);
  });
}
