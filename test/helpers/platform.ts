import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { SearchAttributeType } from '@temporalio/common';
import type { SearchAttributeKey } from '@temporalio/common/lib/search-attributes';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { bundleWorkflowCode, DefaultLogger, Runtime, type WorkflowBundleOption } from '@temporalio/worker';
import { ForgeClient } from '../../src/client';
import { loadConfig, type ForgeConfig } from '../../src/config';
import type { ForgeDatabase } from '../../src/db';
import { findFreePort } from '../../src/process/free-port';
import { requireTemporalBinary } from '../../src/platform/temporal-binary';
import { createForgeWorkers, type ForgeWorkers } from '../../src/worker';
import { ForgeKindKey, ForgeOutcomeKey, ForgeStageKey, ForgeSubjectKey } from '../../src/contract/search-attributes';
import { pgliteBackend, postgresBackend, type TestBackend } from '../db/backends';
import { sourcesHash } from './sources-hash';

let runtimeInstalled = false;
/** The SDK's own logs at WARN: a test's output should show the test's failures, not the worker's INFO lines. */
export function quietTemporalRuntime(): void {
  if (runtimeInstalled) return;
  runtimeInstalled = true;
  try {
    Runtime.install({ logger: new DefaultLogger('WARN') });
  } catch {
    // Already installed by an earlier suite in this process.
  }
}

let bundle: Promise<WorkflowBundleOption> | undefined;
/**
 * The workflow bundle of src/workflows. webpack takes ~3 s of wall and ~4 s of CPU, and jest loads this module afresh
 * for every test file, so it is kept on disk, named by the hash of every file under src/ and the SDK's version: the
 * suites that start a platform bundle once per change of the sources, not once each (issue 28: `npm test`'s CPU).
 */
export function workflowBundle(): Promise<WorkflowBundleOption> {
  bundle ??= cachedWorkflowBundle();
  return bundle;
}

async function cachedWorkflowBundle(): Promise<WorkflowBundleOption> {
  // Under node_modules/.cache (where tools keep their caches), not a shared /tmp another user could write into first.
  const dir = path.join(__dirname, '..', '..', 'node_modules', '.cache', 'forge-test-workflow-bundles');
  const codePath = path.join(dir, `${sourcesHash(path.join(__dirname, '..', '..', 'src'))}.js`);
  if (existsSync(codePath)) return { codePath };
  const { code } = await bundleWorkflowCode({ workflowsPath: require.resolve('../../src/workflows'), logger: new DefaultLogger('WARN') });
  try {
    // Another test process may be writing the same bundle: each writes its own file and renames it into place whole.
    mkdirSync(dir, { recursive: true });
    for (const old of readdirSync(dir)) if (old !== path.basename(codePath)) rmSync(path.join(dir, old), { force: true });
    const tmp = `${codePath}.${process.pid}.tmp`;
    writeFileSync(tmp, code);
    renameSync(tmp, codePath);
  } catch {
    // Not kept: the next file bundles again, nothing worse.
  }
  return { code };
}

/** What a suite may ask of its dev server. */
export interface TemporalOptions {
  /**
   * Serve the Web UI too (off by default: it is one more port and process per suite), on a port from findFreePort;
   * `webUiUrl(env)` says where. Such a server is always started here, even when TEMPORAL_ADDRESS names another: where
   * that one's UI is, and whether it has one, is not known.
   */
  ui?: boolean;
  /**
   * The search attributes to register (default: all of Forge's). A server with other ones is always started here, as
   * with `ui`: what a server at TEMPORAL_ADDRESS has registered is not this suite's to choose.
   */
  searchAttributes?: SearchAttributeKey<SearchAttributeType>[];
}

/** The Web UI's address of each dev server started with `ui: true`. */
const webUiUrls = new WeakMap<TestWorkflowEnvironment, string>();

/** Where the Web UI of a dev server started with `startTemporal({ ui: true })` answers, e.g. `http://127.0.0.1:23456`. */
export function webUiUrl(env: TestWorkflowEnvironment): string | undefined {
  return webUiUrls.get(env);
}

/**
 * A real Temporal dev server: the installed `temporal` binary (or TEMPORAL_ADDRESS when set), with Forge's search
 * attributes registered. No time skipping: that needs a download this machine refuses.
 */
export async function startTemporal(options: TemporalOptions = {}): Promise<TestWorkflowEnvironment> {
  quietTemporalRuntime();
  if (process.env.TEMPORAL_ADDRESS && !options.ui && !options.searchAttributes) {
    return TestWorkflowEnvironment.createFromExistingServer({ address: process.env.TEMPORAL_ADDRESS });
  }
  // The port comes from below the ephemeral range (findFreePort says why); a start-up that still loses a port race
  // to another process is retried with a new one.
  for (let attempt = 1; ; attempt++) {
    try {
      // The UI's default (gRPC port + 1000) could land in the ephemeral range; it gets a port of its own instead.
      const uiPort = options.ui ? await findFreePort() : undefined;
      const env = await TestWorkflowEnvironment.createLocal({
        server: {
          executable: { type: 'existing-path', path: requireTemporalBinary() },
          port: await findFreePort(),
          ...(uiPort !== undefined ? { ui: true, uiPort } : {}),
          searchAttributes: options.searchAttributes ?? [ForgeKindKey, ForgeSubjectKey, ForgeOutcomeKey, ForgeStageKey],
          // No network beyond this machine is assumed (as `forge up` does): the UI must not fetch its news feed.
          extraArgs: ['--log-level', 'error', ...(uiPort !== undefined ? ['--ui-disable-news-fetch'] : [])],
        },
      });
      if (uiPort !== undefined) webUiUrls.set(env, `http://127.0.0.1:${uiPort}`);
      return env;
    } catch (err) {
      if (attempt >= 3) throw err;
    }
  }
}

/**
 * One real dev server for the whole test file: started before its first test, torn down after its last. Returns a
 * getter, since the server exists only once beforeAll has run.
 */
export function useTemporal(options: TemporalOptions = {}): () => TestWorkflowEnvironment {
  let env: TestWorkflowEnvironment | undefined;
  beforeAll(async () => {
    env = await startTemporal(options);
  }, 120_000);
  afterAll(async () => {
    await env?.teardown();
  });
  return () => {
    if (!env) throw new Error('the Temporal dev server is not running (useTemporal() must be called at the top of the file)');
    return env;
  };
}

export type DatabaseKind = 'pglite' | 'postgres';

/** PGlite always; PostgreSQL too when DATABASE_URL is set (CI sets it). */
export function databaseKinds(): DatabaseKind[] {
  return process.env.DATABASE_URL ? ['pglite', 'postgres'] : ['pglite'];
}

/** Forge on a real Temporal and a real database, with its own state directory and task queues. */
export interface TestPlatform {
  env: TestWorkflowEnvironment;
  config: ForgeConfig;
  forge: ForgeClient;
  database: ForgeDatabase;
  workers: ForgeWorkers;
  home: string;
  /** Environment variables that point a child process (CLI, registry) at this platform. */
  childEnv: NodeJS.ProcessEnv;
  /** Stops the workers and closes the database (e.g. to hand PGlite to another process). */
  stopWorkers(): Promise<void>;
  /** Opens the database again and starts new workers. */
  startWorkers(): Promise<void>;
  teardown(): Promise<void>;
}

/** What a suite may change in its platform. */
export interface TestPlatformOptions {
  /** Extra Forge variables (e.g. FORGE_MIGRATION_LOCK_TIMEOUT_MS) for the workers' configuration and childEnv. */
  env?: NodeJS.ProcessEnv;
  /** The database to open instead of a fresh one of `kind` (e.g. PostgreSQL behind a proxy the test controls). */
  backend?: TestBackend;
  /** Where the workers' progress lines go (default: nowhere). */
  log?: (line: string) => void;
}

/** Starts workers for a suite on `env`; each suite gets fresh task queues, state directory and database. */
export async function startTestPlatform(env: TestWorkflowEnvironment, kind: DatabaseKind = 'pglite', options: TestPlatformOptions = {}): Promise<TestPlatform> {
  const base = existsSync('/dev/shm') ? '/dev/shm' : tmpdir();
  const home = mkdtempSync(path.join(base, 'forge-platform-test-'));
  const suffix = randomBytes(4).toString('hex');
  const backend: TestBackend = options.backend ?? (kind === 'postgres' ? postgresBackend(process.env.DATABASE_URL!) : pgliteBackend());
  const childEnv: NodeJS.ProcessEnv = {
    FORGE_HOME: home,
    FORGE_AGENT_TOOLS_DIR: path.join(home, 'agent-tools'),
    FORGE_TASK_QUEUE_CONTROL: `forge-control-${suffix}`,
    FORGE_TASK_QUEUE_SANDBOX: `forge-sandbox-${suffix}`,
    FORGE_TASK_QUEUE_PROMOTE: `forge-promote-${suffix}`,
    FORGE_SANDBOX_CONCURRENCY: '2',
    FORGE_BUILTIN_TOOLS: 'shell,read_file',
    TEMPORAL_ADDRESS: env.connection.options.address,
    TEMPORAL_NAMESPACE: env.namespace ?? 'default',
    ...options.env,
  };
  const config = loadConfig({ ...childEnv, DATABASE_URL: undefined });
  const forge = ForgeClient.fromClient(env.client, {
    // This platform's FORGE_HOME, where the client finds the read API's token.
    env: { ...process.env, ...childEnv },
    taskQueue: config.taskQueues.control,
    promotion: { taskQueue: config.taskQueues.promote, repo: config.promotion.repo },
  });
  const platform: TestPlatform = {
    env,
    config,
    forge,
    database: undefined as unknown as ForgeDatabase,
    workers: undefined as unknown as ForgeWorkers,
    home,
    childEnv,
    async startWorkers() {
      platform.database = await backend.open();
      platform.workers = await createForgeWorkers({
        config,
        connection: env.nativeConnection,
        namespace: env.namespace ?? 'default',
        database: platform.database,
        workflowBundle: await workflowBundle(),
        log: options.log ?? (() => undefined),
      });
      running = platform.workers.run();
    },
    async stopWorkers() {
      await platform.workers.shutdown();
      await running;
      await platform.database.close();
    },
    async teardown() {
      await platform.stopWorkers().catch(() => undefined);
      await backend.dispose();
      rmSync(home, { recursive: true, force: true });
    },
  };
  let running: Promise<void> = Promise.resolve();
  await platform.startWorkers();
  return platform;
}
