import { existsSync } from 'node:fs';
import { hostname } from 'node:os';
import path from 'node:path';
import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import { Worker, type NativeConnection, type WorkerInterceptors, type WorkflowBundleOption } from '@temporalio/worker';
import { armFaultPoints, type FaultInjection } from '../activities/fault-points';
import type { ForgeConfig } from '../config';
import { identityWithReadApi, READ_API_PATHS } from '../contract/read-api';
import { readApiTokenFileOf, workerReadApiToken } from '../process/read-api-token';
import { attemptLedger, attemptsDirOf } from './attempt-ledger';
import { startReadApi, type ReadApi } from './read-api';

/** The workflow bundle `npm run build` writes beside the compiled worker (scripts/bundle-workflows.js). */
const PREBUILT_WORKFLOW_BUNDLE = 'workflow-bundle.js';

/** What the control worker runs, and what the read API answers: both exist only once the database is open. */
interface ControlWork {
  activities: Record<string, (...args: never[]) => Promise<unknown>>;
  reads: Record<(typeof READ_API_PATHS)[keyof typeof READ_API_PATHS], () => Promise<unknown>>;
}

/**
 * The control worker (the workflows and the fast steps), created before the database is open. Its workflow thread loads
 * the workflow bundle (~0.5 s of CPU, the longest step of a worker's start) while the database opens and the activities
 * are built, which a restarted worker otherwise did one after the other (~0.3 s of its start, measured 2026-11-29).
 */
export interface ControlWorkerAhead {
  created: Promise<Worker>;
  /** Where the control worker's identity says reads are answered without a run (undefined: none could start). */
  readApi: Promise<ReadApi | undefined>;
  /** FORGE_FAULT_KILL_AT's hooks (chaos tests only): the checkpoint for the activities' inner steps. */
  faults: FaultInjection | undefined;
  /** Every worker's activity interceptors: the attempt ledger, and the fault points innermost. */
  interceptors: WorkerInterceptors;
  /** The directory of this process's attempt ledger. */
  attempts: string;
  /** Gives the worker its activities and the read API its reads; before this, neither has any (it does not poll yet). */
  bind(work: ControlWork): void;
  /** Releases what was started, for a start that failed before the workers ran. */
  discard(): Promise<void>;
}

export function createControlWorkerAhead(options: {
  config: ForgeConfig;
  connection: NativeConnection;
  namespace: string;
  workflowBundle?: WorkflowBundleOption;
  log: (line: string) => void;
}): ControlWorkerAhead {
  const { config, connection, namespace, log } = options;
  const faults = armFaultPoints(config.faultKillAt);
  // Every attempt this process runs is on file, so a worker restarted here after this one died hands it back at once.
  const attempts = attemptsDirOf(config.home);
  // The fault interceptor comes last, innermost: an attempt killed at its point is on the ledger's file already, as it
  // was when the points were inside the activity functions.
  const interceptors = { activity: [attemptLedger(attempts), ...(faults ? [faults.interceptor] : [])] };
  let work: ControlWork | undefined;
  let bound!: (work: ControlWork) => void;
  const whenBound = new Promise<ControlWork>((resolve) => (bound = resolve));
  const readApi = startControlReadApi(config, log, (p) => whenBound.then((w) => w.reads[p]()));
  const created = readApi.then((api) =>
    Worker.create({
      connection,
      namespace,
      taskQueue: config.taskQueues.control,
      identity: identityWithReadApi(`${process.pid}@${hostname()}`, api),
      ...workflowSource(options.workflowBundle),
      // A workflow's next task goes to this worker's sticky queue first; if the worker died, it falls back to the
      // shared queue after this long (Temporal's default is 10 s: every run a killed worker held stalled that long).
      stickyQueueScheduleToStartTimeout: '2 seconds',
      // The SDK runs its `default` activity for every type not registered by name: this one runs the bound activity of
      // the task's type. Nothing reaches it unbound, since the worker polls only after bind().
      activities: {
        default: (...args: never[]) => {
          const type = Context.current().info.activityType;
          const run = work?.activities[type];
          if (!run) {
            // As the SDK answers a type it does not know: retryable, for a worker that knows it.
            throw ApplicationFailure.create({
              type: 'NotFoundError',
              message: `Activity function ${type} is not registered on this Worker, available activities: ${JSON.stringify(Object.keys(work?.activities ?? {}))}`,
              nonRetryable: false,
            });
          }
          return run(...args);
        },
      },
      interceptors,
    }),
  );
  created.catch(() => undefined);
  return {
    created,
    readApi,
    faults,
    interceptors,
    attempts,
    bind(w) {
      work = w;
      bound(w);
    },
    async discard() {
      await (await readApi)?.close();
      // A worker created but never run holds its workflow thread: run it and stop it at once (it shuts down before a
      // poll returns anything, and nothing is bound to run if one did).
      const worker = await created.catch(() => undefined);
      await worker?.runUntil(Promise.resolve()).catch(() => undefined);
    },
  };
}

/**
 * Reads answered without a run (src/contract/read-api.ts), for clients holding the token (src/process/read-api-token.ts);
 * the control worker's identity tells them where. Not fatal: without it reads start a query run instead.
 */
async function startControlReadApi(
  config: ForgeConfig,
  log: (line: string) => void,
  read: (path: keyof ControlWork['reads']) => Promise<unknown>,
): Promise<ReadApi | undefined> {
  const address = config.readApi.address;
  if (!address) return undefined;
  const routes = Object.fromEntries(Object.values(READ_API_PATHS).map((p) => [p, () => read(p)]));
  const api = await workerReadApiToken(config.home, config.readApi.token)
    .then((token) => startReadApi(address, routes, { token }))
    .catch((err: Error) => {
      log(`forge: no read API on FORGE_API_ADDRESS=${address} (${err.message}); reads start a query run instead`);
      return undefined;
    });
  const whose = config.readApi.token !== undefined ? 'FORGE_API_TOKEN' : readApiTokenFileOf(config.home);
  if (api) log(`forge: read API at ${api.url} for clients holding the token in ${whose} (forge tools, forge migrations: no run started)`);
  return api;
}

/**
 * Where the control worker gets its workflow code: the caller's bundle (tests build one per process), else the one
 * `npm run build` wrote in dist/src (loading it takes milliseconds; bundling takes seconds at every start, which a
 * worker restarted after a crash would spend while its runs wait), else bundled now from the sources (ts-jest, tsx).
 */
function workflowSource(bundle: WorkflowBundleOption | undefined): { workflowBundle: WorkflowBundleOption } | { workflowsPath: string } {
  if (bundle) return { workflowBundle: bundle };
  const prebuilt = path.join(__dirname, '..', PREBUILT_WORKFLOW_BUNDLE);
  if (existsSync(prebuilt)) return { workflowBundle: { codePath: prebuilt } };
  return { workflowsPath: require.resolve('../workflows') };
}
