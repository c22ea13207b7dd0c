import { hostname } from 'node:os';
import path from 'node:path';
import { Client } from '@temporalio/client';
import { Worker, type NativeConnection, type WorkflowBundleOption } from '@temporalio/worker';
import { checkFaultPoints } from './activities/fault-points';
import { formatFaultPoint } from './contract/fault-points';
import { createMigrationActivities } from './activities/migration-activities';
import { createPromotionActivities } from './activities/promotion-activities';
import { createReverifyActivities, createReverifySandboxActivities } from './activities/reverify-activities';
import { createSandboxActivities } from './activities/sandbox-activities';
import { createDeployHereActivities, DEPLOY_HERE_INNER_STEPS, firstStepFinisher } from './activities/deploy-here';
import { SandboxSlots } from './sandbox/slots';
import { createToolActivities, createToolInnerSteps, TOOL_INNER_STEPS, type ToolActivityDeps } from './activities/tool-activities';
import type { ForgeConfig } from './config';
import { createReverifyStore, createToolStore, TOOLS_CHANNEL, type ForgeDatabase, type ToolStore } from './db';
import { checkedOutBuiltinToolNames, headSignature } from './git';
import { sweepDeadWritersTempFiles } from './registry/atomic-file';
import { removeOrphanedLock } from './registry/file-lock';
import { ACTIVE_INDEX_LOCK_FILE } from './registry/tool-files';
import { coalesce } from './registry/coalesce';
import { removeOwnAttempts } from './platform/attempt-ledger';
import { ensureReverifySchedule } from './platform/reverify-schedule';
import { READ_API_PATHS } from './contract/read-api';
import { materializeActiveTools, publishToolChanges, writeToolVersion } from './registry/materialize';
import { rebuildWhenLost } from './registry/rebuild-when-lost';
import { describeIsolation, HarnessSnapshots, SandboxPool, sandboxCleanupsDone } from './sandbox';
import { PreloadSet } from './sandbox/preload';
import { sandboxTempRoot } from './sandbox/paths';
import { sweepOrphanedRunDirs } from './sandbox/run-dirs';
import { sharedTypechecker, TYPECHECK_PASSES_DIR } from './sandbox/typecheck';
import { MAX_DEPLOY_SOURCE_BYTES } from './contract/limits';
import { startX402Worker } from './platform/x402-worker';
import { createControlWorkerAhead, type ControlWorkerAhead } from './platform/control-worker';

/**
 * How long the built-in names read from the agent repository's plan are reused (a deployment reads them) where its
 * HEAD cannot be told without git (headSignature).
 */
const PLAN_NAMES_TTL_MS = 2_000;

/**
 * `load`, called again only once `version()` has changed since the last load, or, where it says nothing (undefined),
 * once `ttlMs` has passed; a failed load is not kept. The version is read before the load it goes with, so a change
 * made while a load runs is seen by the next call.
 */
function cachedWhile<T>(version: () => string | undefined, ttlMs: number, load: () => Promise<T>): () => Promise<T> {
  let cached: { at: number; version?: string; value: Promise<T> } | undefined;
  return () => {
    const now = performance.now();
    const current = version();
    const fresh = cached && (current !== undefined ? cached.version === current : cached.version === undefined && now - cached.at <= ttlMs);
    if (!fresh) {
      const entry = { at: now, version: current, value: load() };
      entry.value.catch(() => {
        if (cached === entry) cached = undefined;
      });
      cached = entry;
    }
    return cached!.value;
  };
}

/**
 * How long after the workers poll the type checker warms up. A restarted worker resumes the runs the dead one held in
 * those seconds, and the warm-up's 1.5-2.5 s of CPU beside them slowed each on 2 cores: started at once (before
 * 2026-11-29, and before that beside the start itself), the matrix's rollback and payment cells recovered in 3,126 ms
 * p50; 3 s later, in 2,285. A deployment within the delay starts the checker itself, as it would have waited for the
 * warm-up; a resumed deployment the dead worker had checked takes its remembered pass (TYPECHECK_PASSES_DIR).
 */
export const TYPECHECK_WARM_UP_DELAY_MS = 3_000;

/** How long after a tools NOTIFY the worker republishes agent-tools/ (coalescing a burst of them into one pass). */
const REPUBLISH_DELAY_MS = 50;

export interface ForgeWorkersOptions {
  config: ForgeConfig;
  connection: NativeConnection;
  namespace: string;
  /** The database, already open; with PGlite this process is the only one that may hold it. */
  database: ForgeDatabase;
  /** A prebuilt workflow bundle (tests build one per suite); by default the worker bundles src/workflows itself. */
  workflowBundle?: WorkflowBundleOption;
  /** Where progress lines go (default stderr). */
  log?: (line: string) => void;
  /** Create or update the `forge-reverify` schedule at start (default true). */
  reverifySchedule?: boolean;
  /** The control worker, already created while the database opened (startPlatform); else created here. */
  control?: ControlWorkerAhead;
}

/** Forge's workers in one process: the control queue (workflows, fast steps) and the capped sandbox queue. */
export interface ForgeWorkers {
  control: Worker;
  sandbox: Worker;
  store: ToolStore;
  /** Runs both until `shutdown()` (or a fatal worker error); resolves when both have stopped. */
  run(): Promise<void>;
  /** Stops polling, lets running tasks finish within the shutdown grace, stops listening. Idempotent. */
  shutdown(): Promise<void>;
}

/**
 * Creates the workers, brings agent-tools/ in line with the database (a worker on a new host materialises the files
 * of every active version), and keeps it in line: every NOTIFY on the tools channel, from this host's activities or
 * another's, republishes it.
 */
export async function createForgeWorkers(options: ForgeWorkersOptions): Promise<ForgeWorkers> {
  const log = options.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  const control = options.control ?? createControlWorkerAhead({ ...options, log });
  return createWorkersAround(control, options, log).catch(async (err: unknown) => {
    await control.discard();
    throw err;
  });
}

async function createWorkersAround(ahead: ControlWorkerAhead, options: ForgeWorkersOptions, log: (line: string) => void): Promise<ForgeWorkers> {
  const { config, connection, namespace, database } = options;
  const store = createToolStore(database);
  const dir = config.agentToolsDir;
  // With names, only those tools' pointers and files (a deployment, a restore, a NOTIFY): nothing per change touches
  // every tool. Without, everything from scratch (the start, a lost directory, a listener that missed notifications).
  const publish = async (names?: readonly string[]) => {
    if (names) return publishToolChanges(store, dir, names);
    const index = await materializeActiveTools(store, dir);
    return { generation: index.generation, tools: Object.keys(index.tools).length };
  };

  // A worker killed between writing a file and renaming it (SIGKILL, OOM) left its temp file here.
  const swept = await sweepDeadWritersTempFiles(dir);
  if (swept.length > 0) log(`forge: removed ${swept.length} temp file(s) a killed worker left in agent-tools/`);
  // And the lock on active.json, if it was killed holding it: the next write would take it over, but none may come.
  if (await removeOrphanedLock(path.join(dir, ACTIVE_INDEX_LOCK_FILE))) log(`forge: removed the lock on active.json a killed worker held`);
  // And its sandbox run directories: a sandbox process sweeps them when it starts, but this worker may start none (no
  // spares, no runs). Beside the start, not on its way: nothing waits for it.
  const runRoot = sandboxTempRoot(config.sandbox.limits.tmpDir);
  void sweepOrphanedRunDirs(runRoot).then((removed) => {
    if (removed.length > 0) log(`forge: removed ${removed.length} run director${removed.length === 1 ? 'y' : 'ies'} a killed worker left in ${runRoot}`);
  });
  const initial = await publish();
  log(`forge: agent-tools/ at ${dir} holds ${initial.tools} active tool(s) (generation ${initial.generation})`);
  for (const line of describeIsolation(config.sandbox.limits)) log(line);
  // Coalesced and a little delayed: a deployment run by this process publishes in its own activity right after its
  // commit, while the commit's NOTIFY is arriving here, so republishing at once would only repeat that work on the
  // deployment's critical path. A change committed by another host's worker is on disk here REPUBLISH_DELAY_MS later.
  // The names the notifications named since the last republish; `all` after the listener reconnected (notifications
  // sent while it was down are lost) or after a republish failed.
  let pending: Set<string> | 'all' = new Set();
  const republish = coalesce(async () => {
    const names = pending;
    pending = new Set();
    await publish(names === 'all' ? undefined : [...names]).catch((err: Error) => {
      pending = 'all';
      log(`forge: could not update agent-tools/ after a change (will retry on the next one): ${err.message}`);
    });
  }, REPUBLISH_DELAY_MS);
  const unlisten = await database.listen(TOOLS_CHANNEL, (name) => {
    if (pending !== 'all') pending.add(name);
    republish.trigger();
  });
  const stopReconnectHook = database.onListenerReconnect(() => {
    pending = 'all';
    republish.trigger();
  });

  // FORGE_FAULT_KILL_AT (chaos tests only): an activity interceptor for the activities, a checkpoint for the steps an
  // activity runs inside itself; undefined, and so nothing at all, when no point is armed.
  const { faults, interceptors, attempts } = ahead;
  const sandboxPool =
    config.sandbox.spares > 0
      ? new SandboxPool(config.sandbox.limits, config.sandbox.spares, {
          preload: new PreloadSet(config.sandbox.preload.packages, config.sandbox.preload.max),
          // Once the control worker's workflow thread has loaded the bundle: booting spares beside it (two Node
          // processes loading zod) slowed a restarted worker's start by 0.2-0.3 s on two cores.
          startWhen: ahead.created,
          // zod already loaded in every spare, from a snapshot this user's workers share (built once, ~0.7 s of CPU).
          snapshots: config.sandbox.snapshot ? new HarnessSnapshots(undefined, log) : undefined,
        })
      : undefined;
  const sandboxSlots = new SandboxSlots(config.sandbox.concurrency);
  const sandboxActivities = createSandboxActivities({ limits: config.sandbox.limits, pool: sandboxPool, slots: sandboxSlots });
  const toolDeps: ToolActivityDeps = {
    store,
    builtinTools: config.builtinTools,
    // Read again only when the repository's HEAD moved (its refs, stat-ed: no git process on a deployment's path),
    // so a built-in name the plan gains is reserved from the next deployment on.
    planBuiltinTools: cachedWhile(
      () => headSignature(config.promotion.repo),
      PLAN_NAMES_TTL_MS,
      () => checkedOutBuiltinToolNames(config.promotion.repo),
    ),
    maxSourceBytes: Math.min(config.sandbox.limits.sourceBytes, MAX_DEPLOY_SOURCE_BYTES),
    writeVersionFiles: async (row) => {
      await writeToolVersion(dir, row);
    },
    publish,
    sandbox: { taskQueue: config.taskQueues.sandbox, maxTimeoutMs: config.sandbox.limits.maxTimeoutMs, here: config.sandbox.testHere },
    typecheck: config.typecheck,
    // Passes remembered in FORGE_HOME: a worker restarted after a crash does not check again, cold, what its
    // predecessor passed (the deployment it held runs its first step again).
    typechecker: config.typecheck === 'off' ? undefined : sharedTypechecker({ passesDir: path.join(config.home, TYPECHECK_PASSES_DIR) }),
    checkpoint: faults?.checkpoint,
    startTestEarly: sandboxActivities.startTestEarly,
    // deployHereActivities, made below from these very activities, exist by the time a deployment calls this.
    finishHere: (input) => finishInFirstStep(input),
  };
  const toolInnerSteps = createToolInnerSteps(toolDeps);
  const toolActivities = createToolActivities(toolDeps, toolInnerSteps);
  const migrationActivities = createMigrationActivities({ database, schema: config.database.schema, limits: config.migrations });
  const deployHereActivities = createDeployHereActivities({
    sandbox: sandboxActivities,
    tools: toolActivities,
    ownCommit: toolInnerSteps,
    checkpoint: faults?.checkpoint,
  });
  const finishInFirstStep = firstStepFinisher(sandboxActivities, deployHereActivities);
  const reverifyResults = createReverifyStore(database);
  const reverifySandboxActivities = createReverifySandboxActivities({
    tools: store,
    results: reverifyResults,
    limits: config.sandbox.limits,
    pool: sandboxPool,
    slots: sandboxSlots,
  });
  const reverifyActivities = createReverifyActivities({
    tools: store,
    results: reverifyResults,
    publish,
    // Here, a lane's next test starts without a server round trip, so more lanes than slots would only wait on the
    // slots, ahead of a deployment's test that finds none free.
    sandbox: {
      taskQueue: config.taskQueues.sandbox,
      maxTimeoutMs: config.sandbox.limits.maxTimeoutMs,
      parallelism: config.sandbox.testHere ? Math.min(config.reverify.parallelism, config.sandbox.concurrency) : config.reverify.parallelism,
      testsHere: config.sandbox.testHere,
    },
    builtin: { repo: config.promotion.repo, promoteQueue: config.taskQueues.promote },
  });
  const promotionQueues = { shared: config.taskQueues.promote, host: `${config.taskQueues.promote}@${hostname()}` };
  const promotionActivities = createPromotionActivities({
    hostQueue: promotionQueues.host,
    worktreeRoot: config.promotion.worktreeRoot,
    identity: config.promotion.identity,
    stageDefaults: config.promotion.stage,
    stageTmpDir: config.sandbox.limits.tmpDir,
    stageNetwork: config.sandbox.limits.network,
    maxRounds: config.promotion.maxRounds,
  });
  // x402: the wallet and the spend policy, the seller (and with FORGE_X402_DEV, the local network this worker runs).
  const x402 = await startX402Worker({ config, database, store, log });
  const { payActivities, sellActivities } = x402;
  // Started with the control worker, whose identity names it; closed with the workers.
  const readApi = await ahead.readApi;
  let control: Worker;
  let sandbox: Worker;
  let promoteShared: Worker;
  let promoteHost: Worker;
  try {
    const controlActivities = {
      ...toolActivities,
      ...deployHereActivities,
      ...migrationActivities,
      ...reverifyActivities,
      // reverifyTest among them: a re-verification's tests where its workflow task runs (FORGE_SANDBOX_TEST_HERE).
      ...reverifySandboxActivities,
      ...payActivities,
      ...sellActivities,
    };
    const sandboxQueueActivities = { testTool: sandboxActivities.testTool, ...reverifySandboxActivities };
    ahead.bind({
      // testAndCommitHere among them: a deployment's test (and its commit) in its own workflow task when a sandbox slot
      // is free here (sandboxSlots).
      activities: controlActivities,
      reads: {
        [READ_API_PATHS.tools]: () => toolActivities.listTools(),
        [READ_API_PATHS.migrations]: () => migrationActivities.listMigrations(),
        [READ_API_PATHS.pnlByTool]: () => payActivities.readPnl({ by: 'tool' }),
        [READ_API_PATHS.pnlByDay]: () => payActivities.readPnl({ by: 'day' }),
        [READ_API_PATHS.x402]: () => Promise.resolve(x402.info()),
      },
    });
    checkFaultPoints(config.faultKillAt, {
      activities: [controlActivities, sandboxQueueActivities, promotionActivities].flatMap((registered) => Object.keys(registered)),
      steps: [...TOOL_INNER_STEPS, ...DEPLOY_HERE_INNER_STEPS],
    });
    if (config.faultKillAt.length > 0) {
      log(`forge: FAULT INJECTION ARMED (FORGE_FAULT_KILL_AT): this worker kills itself at ${config.faultKillAt.map(formatFaultPoint).join(', ')}`);
    }
    // The schedule's RPCs and the workers' creation overlap (the control worker's began before the database was open:
    // see ControlWorkerAhead): a worker restarted after a crash polls the sooner, and every run the dead one held
    // resumes the sooner.
    let schedule: Promise<void> = Promise.resolve();
    if (options.reverifySchedule !== false && !config.reverify.schedule) {
      log('forge: FORGE_REVERIFY_INTERVAL=off: the forge-reverify schedule is left as it is');
    } else if (options.reverifySchedule !== false) {
      // Not fatal: the workers serve deployments without it, and the next start tries again.
      schedule = ensureReverifySchedule(new Client({ connection, namespace }), config).then(
        (done) => log(`forge: schedule forge-reverify ${done} (every ${config.reverify.intervalMs / 1000} s)`),
        (err: Error) => log(`forge: could not create or update the forge-reverify schedule: ${err.message}`),
      );
    }
    const created = Promise.all([
      ahead.created,
      Worker.create({
        connection,
        namespace,
        taskQueue: config.taskQueues.sandbox,
        activities: sandboxQueueActivities,
        interceptors,
        // Each sandbox activity is one child process busy on a core: more at once only slows all of them down.
        maxConcurrentActivityTaskExecutions: config.sandbox.concurrency,
      }),
      // Promotions: the first step on the shared queue (any host that holds the repository), the rest on this host's
      // own queue, where the run's worktree is (samples-typescript's worker-specific task queues).
      Worker.create({ connection, namespace, taskQueue: promotionQueues.shared, activities: promotionActivities, interceptors }),
      Worker.create({
        connection,
        namespace,
        taskQueue: promotionQueues.host,
        activities: promotionActivities,
        interceptors,
        // A stage is a process tree of compilers and test runners: as many at once as sandbox runs.
        maxConcurrentActivityTaskExecutions: config.sandbox.concurrency,
      }),
    ]);
    created.catch(() => undefined);
    // Now, while the control worker's workflow thread loads the bundle: see loadAheadForPaymentsInFlight.
    void x402.loadAheadForPaymentsInFlight();
    await schedule;
    [control, sandbox, promoteShared, promoteHost] = await created;
  } catch (err) {
    // The read API and the control worker: see createForgeWorkers.
    await x402.stop();
    await sandboxPool?.close();
    stopReconnectHook();
    await unlisten().catch(() => undefined);
    throw err;
  }
  const keeper = rebuildWhenLost(dir, () => publish(), {
    onRebuilt: (r) => log(`forge: agent-tools/ at ${dir} was gone; rebuilt from the database (${r.tools} tool(s), generation ${r.generation})`),
    onError: (e) => log(`forge: could not rebuild agent-tools/ (will retry): ${e.message}`),
  });

  let warmUp: NodeJS.Timeout | undefined;
  let stopping: Promise<void> | undefined;
  const shutdown = () => {
    stopping ??= (async () => {
      clearTimeout(warmUp);
      for (const w of [control, sandbox, promoteShared, promoteHost]) if (w.getState() === 'RUNNING') w.shutdown();
      stopReconnectHook();
      await keeper.stop();
      await unlisten().catch(() => undefined);
      await republish.flush();
      await sandboxPool?.close();
      await sandboxCleanupsDone();
      await readApi?.close();
      await x402.stop();
      await removeOwnAttempts(attempts).catch(() => undefined);
    })();
    return stopping;
  };
  return {
    control,
    sandbox,
    store,
    async run() {
      try {
        const running = Promise.all([control.run(), sandbox.run(), promoteShared.run(), promoteHost.run()]);
        // The type checker's first check parses the lib, @types/node and zod's types (1.5-2.5 s of CPU on its thread),
        // done ahead of the first deployment, but not at once: see TYPECHECK_WARM_UP_DELAY_MS.
        if (config.typecheck !== 'off') warmUp = setTimeout(() => void sharedTypechecker().warm(), TYPECHECK_WARM_UP_DELAY_MS).unref();
        x402.startReconciling();
        await running;
      } finally {
        await shutdown();
      }
    },
    shutdown,
  };
}
