import type { ForgeClient } from './client';
import type * as EmbeddedPlatform from './platform/embedded';
import type { ToolRegistry, ToolRegistryOptions } from './registry/tool-registry';

/*
 * The embedded mode's public face: its options and result types, and startForge, which loads the worker side only
 * when it is called. `agent-forge` re-exports this file, and importing the SDK must stay free of the worker, its
 * native bridge, PGlite and x402 (test/sdk/package.test.ts); the implementation is src/platform/embedded.ts.
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
 * Runs Forge inside this process: starts the Temporal dev server (or connects to `temporal.address` /
 * TEMPORAL_ADDRESS), opens the database (PGlite under `home`, or DATABASE_URL), starts Forge's workers, and returns a
 * client on the workers' own connection and a registry over `agentToolsDir`. What `forge up` runs, without a second
 * process to start, find and stop. Whatever started before a step fails is stopped again before the error is thrown.
 *
 * ```ts
 * await using forge = await startForge({ home: '.forge' });
 * await forge.client.deployTool({ name, source });
 * ```
 * @throws ConfigError for an unusable setting, DevServerError when the dev server cannot start (its ports taken),
 *   PlatformUnreachableError when `temporal.address` does not answer.
 */
export async function startForge(options: StartForgeOptions = {}): Promise<EmbeddedForge> {
  // Loaded at call time: the worker side (Temporal's native worker, PGlite, esbuild, x402) is tens of megabytes that
  // a program which only connects to a platform never needs.
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const { startEmbeddedForge } = require('./platform/embedded') as typeof EmbeddedPlatform;
  return startEmbeddedForge(options);
}
