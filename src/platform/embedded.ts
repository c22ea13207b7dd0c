import path from 'node:path';
import { Client, type WorkflowClientInterceptor } from '@temporalio/client';
import { ForgeClient } from '../client';
import { loadConfig } from '../config';
import { ToolRegistry, type ToolRegistryOptions } from '../registry/tool-registry';
import { seedAgentRepo } from './agent-repo';
import { makeStatePrivate } from './private-home';
import { startPlatform } from './run-platform';
import { installForgeRuntime } from './telemetry';

/*
 * The embedded platform (src/embedded.ts says what it is for): startPlatform, as `forge up` runs it, plus a client on
 * the workers' connection and a registry over their agent-tools/ directory. Loaded only when startForge is called.
 */

/** What startForge runs and where; everything not given comes from Forge's configuration (the environment). */
export interface StartForgeOptions {
  /** FORGE_HOME: the dev server's SQLite file, PGlite's data and the agent repository (default FORGE_HOME, else ./.forge). */
  home?: string;
  /** Where active tool versions are written and the registry loads them (default FORGE_AGENT_TOOLS_DIR, else ./agent-tools). */
  agentToolsDir?: string;
  /** The environment Forge's configuration is read from instead of the process's environment (`home` and `agentToolsDir` win over it). */
  env?: NodeJS.ProcessEnv;
  /**
   * A Temporal to connect to instead of starting the dev server. Without an address (here or TEMPORAL_ADDRESS), the
   * `temporal` CLI's dev server is started on FORGE_TEMPORAL_PORT / FORGE_UI_PORT and stopped by close(), as `forge up`.
   */
  temporal?: { address?: string; namespace?: string };
  /** Options of the returned registry (its limits are the configuration's, FORGE_SANDBOX_*). */
  registry?: Pick<ToolRegistryOptions, 'spares' | 'concurrency' | 'pollIntervalMs' | 'fsWatch' | 'onReloadError'>;
  /**
   * Start runs eagerly (default true): the client shares the workers' connection, so Temporal can hand a new run's
   * first workflow task back in the start call's own response instead of through the task queue.
   */
  eagerStart?: boolean;
  /** Where the platform's progress lines and the workers' warnings go (default stderr; stdout is left to the program). */
  log?: (line: string) => void;
}

/** Forge running inside this process, and the two handles a program uses it through. */
export interface EmbeddedForge extends AsyncDisposable {
  /** Deploys, migrates, promotes, reads runs: a ForgeClient on the workers' own connection. Close the Forge, not it. */
  client: ForgeClient;
  /** The active tools, loaded from `agentToolsDir` and reloaded as deployments land; calls run sandboxed. */
  registry: ToolRegistry;
  home: string;
  agentToolsDir: string;
  temporal: {
    address: string;
    namespace: string;
    /** The Web UI of the dev server this Forge started (none when it connected to a Temporal). */
    uiUrl?: string;
    /** Whether this Forge started the dev server (close() stops it) or connected to one (left running). */
    started: boolean;
  };
  /** Resolves once the workers have stopped (after close()); rejects if a worker fails on its own. */
  done: Promise<void>;
  /**
   * Shuts everything down, in order, and resolves when nothing of it runs: the registry (its sandbox processes), the
   * workers (running tasks finish within the shutdown grace), the connection, the dev server if this Forge started
   * it, and the database (PGlite's lock released, so another Forge can open the same home). Idempotent.
   */
  close(): Promise<void>;
}

/**
 * Asks for an eager start on every workflow start. Temporal then returns the run's first workflow task in the start
 * call's response, and the SDK hands it to this process's worker for the queue directly: no trip through the task
 * queue's matching and the worker's long poll. A start the server cannot make eager (no slot free, a run joined through
 * USE_EXISTING, a queue no worker here polls) is an ordinary start, so this never changes what a start does.
 */
const eagerStart: WorkflowClientInterceptor = {
  startWithDetails: (input, next) => next({ ...input, options: { ...input.options, requestEagerStart: true } }),
};

/** startForge's implementation: see src/embedded.ts. */
export async function startEmbeddedForge(options: StartForgeOptions): Promise<EmbeddedForge> {
  const env: NodeJS.ProcessEnv = {
    ...(options.env ?? process.env),
    ...(options.home !== undefined ? { FORGE_HOME: options.home } : {}),
    ...(options.agentToolsDir !== undefined ? { FORGE_AGENT_TOOLS_DIR: options.agentToolsDir } : {}),
  };
  const config = loadConfig(env);
  const log = options.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  // As `forge up`: the dev server unless a Temporal is named (here or by TEMPORAL_ADDRESS).
  const address = options.temporal?.address ?? (env.TEMPORAL_ADDRESS?.trim() || undefined);

  // The process's Temporal Runtime, if none exists yet (the SDK shuts an idle one down, so after close() the next start
  // installs it again): Forge's log lines (a run's outcome, the SDK's warnings) into `log` instead of the SDK's INFO
  // chatter on the console. Metrics only when FORGE_METRICS_ADDRESS is set: unlike `forge up`, a program that embeds
  // Forge did not ask for a listening port, and the default one may be its own or another embedded Forge's.
  installForgeRuntime({
    metrics: config.metrics.configured ? config.metrics : { configured: false },
    write: (text) => log(text.replace(/\n$/, '')),
  });

  // As `forge up`: Forge's state private to this user before anything is written there (src/platform/private-home.ts).
  makeStatePrivate(config, log);
  // As `forge up`: the default agent repository is seeded the first time, so promoteBuiltin works at once.
  if (config.promotion.repo === path.join(config.home, 'agent-repo')) {
    await seedAgentRepo({ target: config.promotion.repo, identity: config.promotion.identity });
  }
  const platform = await startPlatform({
    config,
    embeddedTemporal: address === undefined,
    temporal: { env, address, namespace: options.temporal?.namespace },
    log,
  });
  // A failure of the workers is the program's to see through `done`; marked handled here so that it does not end
  // the process as an unhandled rejection when the program does not look.
  platform.done.catch((err: Error) => log(`forge: the workers stopped: ${err.message}`));

  let registry: ToolRegistry;
  try {
    registry = await ToolRegistry.open({ ...options.registry, dir: config.agentToolsDir, limits: config.sandbox.limits });
  } catch (err) {
    await platform.stop();
    throw err;
  }
  const temporal = new Client({
    connection: platform.connection,
    namespace: platform.namespace,
    interceptors: options.eagerStart === false ? undefined : { workflow: [eagerStart] },
  });
  const client = ForgeClient.fromClient(temporal, {
    env,
    address: platform.address,
    taskQueue: config.taskQueues.control,
    promotion: { taskQueue: config.taskQueues.promote, repo: config.promotion.repo },
  });

  let closing: Promise<void> | undefined;
  const close = (): Promise<void> => {
    // The registry first (its sandbox processes), then startPlatform's own order: workers, connection, dev server,
    // database. The client needs no closing of its own: its connection is the workers', closed after them.
    closing ??= (async () => {
      await registry.close().catch((err: Error) => log(`forge: while closing the registry: ${err.message}`));
      await platform.stop();
    })();
    return closing;
  };
  return {
    client,
    registry,
    home: config.home,
    agentToolsDir: config.agentToolsDir,
    temporal: { address: platform.address, namespace: platform.namespace, uiUrl: platform.uiUrl, started: address === undefined },
    done: platform.done,
    close,
    [Symbol.asyncDispose]: close,
  };
}
