import type * as EmbeddedPlatform from './platform/embedded';
import type { EmbeddedForge, StartForgeOptions } from './platform/embedded';

/*
 * The embedded mode's public face: its options and result types, and startForge, which loads the worker side only
 * when it is called. `agent-forge` re-exports this file, and importing the SDK must stay free of the worker, its
 * native bridge, PGlite and x402 (test/sdk/package.test.ts); the implementation is src/platform/embedded.ts.
 */

// The options and the result are declared beside the implementation, which needs them, and this file loads (a type
// declared here and imported there made the two files a circle).
export type { EmbeddedForge, StartForgeOptions };

/** The worker side, loaded when startForge is called (see there). */
// eslint-disable-next-line @typescript-eslint/no-require-imports
const embeddedPlatformModule = (): typeof EmbeddedPlatform => require('./platform/embedded');

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
  const { startEmbeddedForge } = embeddedPlatformModule();
  return startEmbeddedForge(options);
}
