import { createHash, randomBytes } from 'node:crypto';
import {
  ScheduleNotFoundError,
  ScheduleOverlapPolicy,
  WorkflowExecutionAlreadyStartedError,
  WorkflowFailedError,
  WorkflowNotFoundError,
  type Client,
  type WorkflowExecutionDescription,
  type WorkflowHandle,
  type WorkflowStartOptions,
} from '@temporalio/client';
import type { Workflow, WorkflowResultType } from '@temporalio/common';
import type * as Workflows from './workflows';
import { z } from 'zod';
import path from 'node:path';
import { loadConfig, type ForgeConfig } from './config';
import { ApplicationFailure } from '@temporalio/common';
import { temporal as proto } from '@temporalio/proto';
import { READ_API_PATHS, readApiOf } from './contract/read-api';
import { clientReadApiToken } from './process/read-api-token';
import { FailureType } from './contract/failures';
import {
  ForgeInputError,
  NoWorkerError,
  PlatformUnreachableError,
  RunNotFoundError,
  ScheduleMissingError,
  SearchAttributesMissingError,
  type SearchAttributeSpec,
} from './contract/errors';
import { REVERIFY_SCHEDULE_ID, type ReverifyScheduleInfo, type ReverifySummary } from './contract/reverify-runs';
import { canonicalJson, migrationChecksum, toolContentHash } from './contract/hashes';
import {
  deleteToolInput,
  deployToolInput,
  discoverServicesInput,
  getRunInput,
  listRunsInput,
  migrateSchemaInput,
  payInput,
  pnlInput,
  promoteBuiltinInput,
  rollbackToolInput,
  sellInput,
  type DiscoverServicesInput,
  type PayOptionsInput,
  type PnlInput,
  type SellOptionsInput,
} from './contract/inputs';
import type { ForgeKind, RUN_STATUSES } from './contract/kinds';
export { RUN_STATUSES } from './contract/kinds';
import { MIGRATE_STAGES, type ListMigrationsResult, type MigrateSchemaInput, type MigrateSchemaResult } from './contract/migration-runs';
import type { RunProgress, StageRecord } from './contract/run-progress';
import { FORGE_SEARCH_ATTRIBUTES, ForgeKindKey, ForgeOutcomeKey, ForgeStageKey, ForgeSubjectKey } from './contract/search-attributes';
import {
  DEPLOY_STAGES,
  type DeleteToolResult,
  type DeployToolInput,
  type DeployToolResult,
  type ListToolsResult,
  type RollbackToolResult,
} from './contract/tool-runs';
import { WORKFLOW_TASK_TIMEOUT } from './contract/workflow-task-timeout';
import type * as DiscoveryModule from './x402/discovery';
import {
  PAY_WORKFLOW_PREFIX,
  type PayInput,
  type PayResult,
  type PnlResult,
  type SellInput,
  type SellResult,
  type ServicesResult,
  type X402Info,
} from './contract/pay-runs';
import { type PromoteBuiltinInput, type PromoteBuiltinResult, type PromoteBuiltinWorkflowInput } from './contract/promotion-runs';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  connectClient,
  missingSearchAttributeOf,
  resolveTemporalConnection,
  toPlatformError,
  type TemporalConnectOptions,
} from './platform/temporal-connection';

/** The x402 discovery client, loaded by discoverServices only: not every program that imports the SDK needs the x402 packages. */
// eslint-disable-next-line @typescript-eslint/no-require-imports
const discoveryModule = (): typeof DiscoveryModule => require('./x402/discovery');

// The SDK's whole vocabulary: its inputs, results and errors come from the contract every layer shares.
export * from './contract';

/**
 * Forge's workflows by the names the worker registers them under (src/workflows/index.ts). Imported as types only: the
 * client loads no workflow code (test/contract/import-graph.test.ts), yet a start that names one is checked against it,
 * its name, its arguments and its result.
 */
type ForgeWorkflows = typeof Workflows;
/** A run `ForgeClient.run()` starts and waits for: which workflow, under what ID, and what the Web UI shows of it. */
interface QuickRun<K extends ForgeWorkflowName> {
  /** The workflow's registered name. */
  workflow: K;
  workflowId: string;
  /** ForgeKind and ForgeSubject, its search attributes. */
  kind: ForgeKind;
  subject: string;
  /** The workflow's arguments. */
  args: Parameters<ForgeWorkflow<K>>;
  /** The Web UI's one-line summary. */
  summary: string;
  /** The Web UI's details, one markdown line each. */
  details?: string[];
}
/** The name of one of Forge's workflows. */
type ForgeWorkflowName = { [K in keyof ForgeWorkflows]: ForgeWorkflows[K] extends Workflow ? K : never }[keyof ForgeWorkflows];
/** The workflow function registered under `K`. */
type ForgeWorkflow<K extends ForgeWorkflowName> = Extract<ForgeWorkflows[K], Workflow>;

/** Called with each change of a run's progress while the client waits for it. */
export type ProgressListener = (progress: RunProgress) => void;

export interface ForgeClientOptions extends TemporalConnectOptions, OutageOptions, PromotionOptions {
  /** The control task queue the workers poll (default: FORGE_TASK_QUEUE_CONTROL or `forge-control`). */
  taskQueue?: string;
}

/** Where promotions go, when not as configured (FORGE_TASK_QUEUE_PROMOTE, FORGE_BUILTIN_REPO). */
export interface PromotionOptions {
  promotion?: { taskQueue?: string; repo?: string };
}

/** How a client waiting for a run's result rides out a Temporal service that stops answering. */
export interface OutageOptions {
  /**
   * How long a wait for a result goes on while the service cannot be reached (a restart, a network blip), before it
   * gives up with a PlatformUnreachableError. The run itself goes on regardless. Default 120 s.
   */
  waitThroughOutageMs?: number;
  /** Told each time the wait finds the service unreachable and tries again (the CLI says so on stderr). */
  onOutage?: (outage: OutageEvent) => void;
  /**
   * Give up on a run no Forge worker polls for: once a wait for a result has had no answer for this long, the client
   * checks the control queue's pollers (DescribeTaskQueue), and when none is there on two checks in a row it throws a
   * NoWorkerError, withdrawing the run if it had not begun. Default: undefined, wait however long it takes (a program
   * may start its workers after its runs). The CLI sets 2.5 s unless given --wait.
   */
  failWithoutWorkerAfterMs?: number;
}

/** What `describeWorkers` tells of a task queue. */
export interface WorkersInfo {
  taskQueue: string;
  namespace: string;
  /** True when at least one worker polls it now. */
  polling: boolean;
  /** The workers that polled it lately (a live worker polls again at least once a minute), newest first. */
  pollers: Array<{ identity: string; lastAccessTime: string }>;
}

export interface OutageEvent {
  address: string;
  workflowId: string;
  /** How long the service has been unreachable for this wait. */
  unreachableMs: number;
  /** When the wait gives up, counted from the first failure. */
  giveUpAfterMs: number;
}

const DEFAULT_WAIT_THROUGH_OUTAGE_MS = 120_000;
/** How long a progress query in flight when the result arrives may still take before it is cancelled. */
const QUERY_GRACE_MS = 500;
/** How long one slice of a cancellable wait for a result lasts (a few of the server's ~20 s long polls). */
const RESULT_WAIT_SLICE_MS = 60_000;

/**
 * Runs Temporal calls under an AbortSignal of their own that `signal` aborts. Temporal's connection adds an 'abort'
 * listener to the signal of every gRPC call it makes and never removes it (@temporalio/client connection.js), so
 * many calls under one long-lived signal (a progress query every 150 ms) collected listeners until Node printed
 * MaxListenersExceededWarning. The own signal is dropped with its listeners once `fn` settles, and the one listener
 * this adds to `signal` is removed then. `own` may be aborted by the caller too (a slice of a wait that ends).
 */
async function withOwnSignal<T>(temporal: Client, signal: AbortSignal, fn: () => Promise<T>, own = new AbortController()): Promise<T> {
  const forward = () => own.abort(signal.reason);
  if (signal.aborted) forward();
  else signal.addEventListener('abort', forward, { once: true });
  try {
    return await temporal.withAbortSignal(own.signal, fn);
  } finally {
    signal.removeEventListener('abort', forward);
  }
}

/** A started run: its ID, its live progress, and its result. */
export interface RunHandle<R> {
  workflowId: string;
  runId: string;
  progress(): Promise<RunProgress | undefined>;
  result(options?: { onProgress?: ProgressListener }): Promise<R>;
}

/** A started deployment. */
export type DeployHandle = RunHandle<DeployToolResult>;

/** The execution statuses `listRuns` filters on, as an operator types them. */
const VISIBILITY_STATUS: Record<(typeof RUN_STATUSES)[number], string> = {
  running: 'Running',
  completed: 'Completed',
  failed: 'Failed',
  canceled: 'Canceled',
  terminated: 'Terminated',
  timed_out: 'TimedOut',
};

/** One line of `forge runs`. */
export interface RunSummary {
  workflowId: string;
  runId: string;
  type: string;
  status: string;
  kind?: string;
  subject?: string;
  outcome?: string;
  /** The stage the run is in, or the last it reached (ForgeStage). */
  stage?: string;
  startTime: string;
  closeTime?: string;
}

/** What `getRun` tells about any Forge run. */
export interface RunInfo extends RunSummary {
  progress?: RunProgress;
  result?: unknown;
  failure?: string;
}

/**
 * The SDK an agent uses: typed methods that start Forge's workflows and wait for their results. Inputs are checked
 * before anything starts; a platform that cannot be reached is one `PlatformUnreachableError`.
 */
export class ForgeClient {
  private constructor(
    /** The underlying Temporal client, for anything this SDK does not wrap. */
    readonly temporal: Client,
    private readonly taskQueue: string,
    /** Where promotions go: the shared promotion queue and the repository promoted into when a call names none. */
    private readonly promotion: { taskQueue: string; repo: string },
    private readonly address: string,
    private readonly outage: OutageOptions = {},
    /** FORGE_X402_FACILITATOR_URL as the caller's configuration has it: where discovery asks when the worker does not say. */
    private readonly facilitatorUrl?: string,
    /** Where this client finds the read API's token: FORGE_API_TOKEN, else the token file under FORGE_HOME. */
    private readonly readApi: { home: string; token?: string } = { home: '' },
  ) {}

  /** Connects through the standard Temporal environment configuration (TEMPORAL_ADDRESS, ..., or `options`). */
  static async connect(options: ForgeClientOptions = {}): Promise<ForgeClient> {
    const config = loadConfig(options.env ?? process.env);
    const client = await connectClient(options);
    return new ForgeClient(
      client,
      options.taskQueue ?? config.taskQueues.control,
      promotionSettings(config, options),
      resolveTemporalConnection(options).address,
      options,
      config.x402.facilitatorUrl,
      { home: config.home, token: config.readApi.token },
    );
  }

  /**
   * Wraps an existing Temporal client (tests, an embedded platform, or an application that already holds one).
   * `env`: the configuration it reads its defaults from (default process.env); `address`: how errors name the server.
   */
  static fromClient(
    client: Client,
    options: { taskQueue?: string; env?: NodeJS.ProcessEnv; address?: string } & OutageOptions & PromotionOptions = {},
  ): ForgeClient {
    const config = loadConfig(options.env ?? process.env);
    return new ForgeClient(
      client,
      options.taskQueue ?? config.taskQueues.control,
      promotionSettings(config, options),
      options.address ?? 'the configured address',
      options,
      config.x402.facilitatorUrl,
      { home: config.home, token: config.readApi.token },
    );
  }

  async close(): Promise<void> {
    await this.temporal.connection.close();
  }

  /** Deploys a tool and waits: `active` with its version, or `rejected` with the verdict and diagnostics. */
  async deployTool(input: DeployToolInput, options: { onProgress?: ProgressListener } = {}): Promise<DeployToolResult> {
    const handle = await this.startDeployTool(input);
    return handle.result(options);
  }

  /**
   * Starts a deployment and returns at once. The run's ID is derived from the content, and a start for content
   * already being deployed joins that run instead of starting another (the handle then names that run).
   */
  async startDeployTool(input: DeployToolInput): Promise<DeployHandle> {
    const parsed = parseInput(deployToolInput, input, 'deployTool');
    const contentHash = toolContentHash(parsed);
    const workflowId = `tool-deploy/${parsed.name}/${contentHash.slice(0, 16)}`;
    const handle = await this.call(() =>
      this.start('deployToolWorkflow', {
        taskQueue: this.taskQueue,
        workflowId,
        workflowTaskTimeout: WORKFLOW_TASK_TIMEOUT,
        args: [{ ...parsed, contentHash }],
        workflowIdConflictPolicy: 'USE_EXISTING',
        typedSearchAttributes: searchAttributes('deploy', parsed.name, DEPLOY_STAGES[0]),
        staticSummary: `Deploy tool ${parsed.name}`,
        staticDetails: [
          `**tool:** ${parsed.name}`,
          `**content hash:** \`${contentHash}\``,
          `**source:** ${Buffer.byteLength(parsed.source)} bytes`,
          parsed.description ? `**description:** ${parsed.description}` : '',
        ]
          .filter(Boolean)
          .join('\n'),
      }),
    );
    const runId = handle.firstExecutionRunId;
    return {
      workflowId,
      runId,
      progress: () => this.progressOf(handle),
      result: (opts = {}) => this.waitWithProgress(handle, opts.onProgress, { kind: 'deploy', subject: parsed.name }),
    };
  }

  /** Makes an earlier version active (`toVersion`, or the newest below the active one) and waits. */
  async rollbackTool(name: string, options: { toVersion?: number } = {}): Promise<RollbackToolResult> {
    const input = parseInput(rollbackToolInput, { name, toVersion: options.toVersion }, 'rollbackTool');
    const workflowId = `tool-rollback/${input.name}/${input.toVersion !== undefined ? `v${input.toVersion}` : 'previous'}-${shortId()}`;
    return this.run({
      workflow: 'rollbackToolWorkflow',
      workflowId,
      kind: 'rollback',
      subject: input.name,
      args: [input],
      summary: `Roll back tool ${input.name}`,
      details: [`**tool:** ${input.name}`, `**to:** ${input.toVersion !== undefined ? `v${input.toVersion}` : 'the newest version below the active one'}`],
    });
  }

  /** Deactivates a tool and removes its versions, and waits. */
  async deleteTool(name: string): Promise<DeleteToolResult> {
    const input = parseInput(deleteToolInput, { name }, 'deleteTool');
    return this.run({
      workflow: 'deleteToolWorkflow',
      workflowId: `tool-delete/${input.name}/${shortId()}`,
      kind: 'delete',
      subject: input.name,
      args: [input],
      summary: `Delete tool ${input.name}`,
      details: [`**tool:** ${input.name}`, '**does:** deactivates it and removes every version; the name can be deployed again'],
    });
  }

  /**
   * The active tools, read by the worker that holds the database: through its read API (no run is started), or, when
   * no read API of this platform can be reached (a client on another host), through a query workflow.
   */
  async listTools(): Promise<ListToolsResult> {
    const read = await this.readThroughApi<ListToolsResult>(READ_API_PATHS.tools);
    if (read) return read;
    await this.requireWorker();
    return this.run({
      workflow: 'listToolsWorkflow',
      workflowId: `forge-query/list-tools/${shortId()}`,
      kind: 'query',
      subject: 'tools',
      args: [],
      summary: 'List active tools',
    });
  }

  /**
   * Applies a schema migration through the migration workflow (`schema-migrate/<name>`) and waits: `applied`,
   * `alreadyApplied` (this name and SQL were applied before; nothing changed), `rejected` (the schema policy, or the
   * name is taken by other SQL; nothing ran) or `failed` (PostgreSQL refused it while it ran; rolled back).
   *
   * A start while a run of the same name is under way joins that run; when that run was for other SQL, this call
   * waits for it to end and then starts its own, which judges this SQL against what the other left.
   */
  async migrateSchema(input: MigrateSchemaInput, options: { onProgress?: ProgressListener } = {}): Promise<MigrateSchemaResult> {
    const parsed = parseInput(migrateSchemaInput, input, 'migrateSchema');
    const checksum = migrationChecksum(parsed.sql);
    const workflowId = `schema-migrate/${parsed.name}`;
    for (let attempt = 1; ; attempt++) {
      const handle = await this.call(() =>
        this.start('migrateSchemaWorkflow', {
          taskQueue: this.taskQueue,
          workflowId,
          workflowTaskTimeout: WORKFLOW_TASK_TIMEOUT,
          args: [{ ...parsed, checksum }],
          workflowIdConflictPolicy: 'USE_EXISTING',
          typedSearchAttributes: searchAttributes('migrate', parsed.name, MIGRATE_STAGES[0]),
          staticSummary: `Migrate schema: ${parsed.name}`,
          staticDetails: [`**migration:** ${parsed.name}`, `**checksum:** \`${checksum}\``, `**SQL:** ${Buffer.byteLength(parsed.sql)} bytes`].join('\n'),
        }),
      );
      const result = await this.waitWithProgress(handle, options.onProgress, { kind: 'migrate', subject: parsed.name });
      if (result.checksum === checksum) return result;
      if (attempt >= 5) {
        throw new Error(`migrateSchema: runs of "${parsed.name}" for other SQL kept starting before ours; try again later`);
      }
    }
  }

  /** The applied agent migrations, oldest first, read by the worker that holds the database (as listTools reads). */
  async listMigrations(): Promise<ListMigrationsResult> {
    const read = await this.readThroughApi<ListMigrationsResult>(READ_API_PATHS.migrations);
    if (read) return read;
    await this.requireWorker();
    return this.run({
      workflow: 'listMigrationsWorkflow',
      workflowId: `forge-query/list-migrations/${shortId()}`,
      kind: 'query',
      subject: 'migrations',
      args: [],
      summary: 'List applied migrations',
    });
  }

  /**
   * Promotes a change to the agent's built-in code through PromoteBuiltinWorkflow and waits: `promoted` (the branch
   * is at exactly the tested commit), `verified` (a dry run that passed: nothing merged) or `rejected` (with the
   * stage, the category and the verification envelope). Nothing of a rejected change is left behind.
   */
  async promoteBuiltin(input: PromoteBuiltinInput, options: { onProgress?: ProgressListener } = {}): Promise<PromoteBuiltinResult> {
    const handle = await this.startPromoteBuiltin(input);
    return handle.result(options);
  }

  /** Starts a promotion and returns at once; every start is a run of its own (`builtin-promote/<repo>/<branch>/...`). */
  async startPromoteBuiltin(input: PromoteBuiltinInput): Promise<RunHandle<PromoteBuiltinResult>> {
    const parsed = parseInput(promoteBuiltinInput, input, 'promoteBuiltin');
    const repo = path.resolve(parsed.repo ?? this.promotion.repo);
    const paths = parsed.changes.map((c) => c.path);
    const message = parsed.message ?? `Promote ${paths.length === 1 ? paths[0] : `${paths.length} files`} through Forge`;
    const workflowId = `builtin-promote/${path.basename(repo)}/${parsed.branch ?? 'HEAD'}/${shortId()}`;
    const subject = `${path.basename(repo)}/${parsed.branch ?? 'HEAD'}`;
    const workflowInput: PromoteBuiltinWorkflowInput = { ...parsed, repo, message, promoteQueue: this.promotion.taskQueue };
    const handle = await this.call(() =>
      this.start('promoteBuiltinWorkflow', {
        taskQueue: this.taskQueue,
        workflowId,
        workflowTaskTimeout: WORKFLOW_TASK_TIMEOUT,
        args: [workflowInput],
        typedSearchAttributes: searchAttributes('promote', subject),
        staticSummary: `${parsed.dryRun ? 'Verify' : 'Promote'} ${paths.length} file(s) into ${subject}`,
        staticDetails: [
          `**repository:** ${repo}`,
          `**branch:** ${parsed.branch ?? '(checked out)'}`,
          `**message:** ${message}`,
          ...paths.map((p) => `- \`${p}\``),
        ].join('\n'),
      }),
    );
    return {
      workflowId,
      runId: handle.firstExecutionRunId,
      progress: () => this.progressOf(handle),
      result: (opts = {}) => this.waitWithProgress(handle, opts.onProgress, { kind: 'promote', subject }),
    };
  }

  /**
   * Pays for an HTTP resource over x402 through PayWorkflow and waits: `paid` (the response, after a payment settled
   * exactly once; amount "0" when the resource asked for none), `refused` (the spend policy or the daily budget, naming
   * the limit and the amounts: nothing signed) or `failed` (the resource could not be paid; the reason says why).
   * The worker signs with its own wallet: no key passes through this call.
   */
  async pay(url: string, options: PayOptions = {}): Promise<PayResult> {
    const parsed = parseInput(payInputSchema, { url, ...options, onProgress: undefined }, 'pay');
    // Without a key of the caller's, a fresh one: printed in the result, so that a retry after a timeout can join.
    const idempotencyKey = parsed.idempotencyKey ?? shortId();
    const input: PayInput = { ...parsed, idempotencyKey, maxAmount: parsed.maxAmount === undefined ? undefined : String(parsed.maxAmount) };
    const target = new URL(parsed.url);
    const subject = `${target.host}${target.pathname}`;
    const workflowId = payWorkflowId(input, idempotencyKey);
    const start = () =>
      this.start('payWorkflow', {
        taskQueue: this.taskQueue,
        workflowId,
        workflowTaskTimeout: WORKFLOW_TASK_TIMEOUT,
        args: [input],
        // The same key joins the run in flight, and never starts a second payment after the first one ended.
        workflowIdConflictPolicy: 'USE_EXISTING',
        workflowIdReusePolicy: 'REJECT_DUPLICATE',
        typedSearchAttributes: searchAttributes('pay', subject),
        staticSummary: `Pay for ${input.method ?? 'GET'} ${subject}`,
        staticDetails: [
          `**resource:** ${parsed.url}`,
          `**method:** ${input.method ?? 'GET'}`,
          `**idempotency key:** ${idempotencyKey}`,
          ...(input.maxAmount ? [`**max amount:** ${input.maxAmount}`] : []),
        ].join('\n'),
      });
    let handle: WorkflowHandle<ForgeWorkflow<'payWorkflow'>>;
    try {
      handle = await this.call(start);
    } catch (err) {
      if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
      handle = this.temporal.workflow.getHandle<ForgeWorkflow<'payWorkflow'>>(workflowId);
    }
    return this.waitWithProgress(handle, options.onProgress, { kind: 'pay', subject });
  }

  /**
   * Offers an active tool as a paid x402 endpoint of the worker's seller (SellToolWorkflow): `offered` with its URL and
   * price, or `refused` (no such active tool, or a worker that cannot sell, saying why). `{stop: true}` withdraws it.
   */
  async sell(tool: string, options: Omit<SellOptionsInput, 'tool'>): Promise<SellResult> {
    // `price`: base units, or money (`$0.01`, `0.01 USD`); the result's `price` is base units either way, with
    // `priceGiven` and `priceInTokens` beside it. Money finer than the asset's decimals is refused with `problem: 'price'`.
    const parsed = parseInput(sellInput, { tool, ...options }, 'sell');
    const input: SellInput = {
      tool: parsed.tool,
      price: parsed.price === undefined ? undefined : String(parsed.price),
      stop: parsed.stop,
      description: parsed.description,
    };
    return this.run({
      workflow: 'sellToolWorkflow',
      workflowId: `x402-sell/${tool}/${shortId()}`,
      kind: 'sell',
      subject: tool,
      args: [input],
      summary: input.stop ? `Stop selling ${tool}` : `Sell ${tool} at ${input.price} per call`,
      details: [`**tool:** ${tool}`, input.stop ? '**withdraw**' : `**price:** ${input.price}${/^\d+$/.test(input.price ?? '') ? ' base units' : ''} per call`],
    });
  }

  /** The worker's x402 side, from its read API: its wallet address, its seller, the facilitator it uses. */
  async x402Info(): Promise<X402Info | undefined> {
    return this.readThroughApi<X402Info>(READ_API_PATHS.x402);
  }

  /**
   * Services offered over x402, from the facilitator's bazaar discovery: `facilitatorUrl`, else the one the worker
   * uses (FORGE_X402_FACILITATOR_URL, or the local network's with FORGE_X402_DEV). `query` keeps those whose
   * description or input mention every word of it.
   */
  async discoverServices(input: DiscoverServicesInput = {}): Promise<ServicesResult> {
    const options = parseInput(discoverServicesInput, input, 'discoverServices');
    const facilitatorUrl = options.facilitatorUrl ?? (await this.x402Info())?.facilitatorUrl ?? this.facilitatorUrl;
    if (!facilitatorUrl) {
      throw new ForgeInputError(
        'discoverServices: no facilitator is known: pass facilitatorUrl, or set FORGE_X402_FACILITATOR_URL (or run the worker with FORGE_X402_DEV=1)',
        [{ path: ['facilitatorUrl'], message: 'required' }],
      );
    }
    const { discoverServices } = discoveryModule();
    const found = await discoverServices({ facilitatorUrl, query: options.query, network: options.network, limit: options.limit });
    return {
      facilitatorUrl,
      services: found.services.map((s) => ({
        url: s.url,
        method: s.method,
        description: s.description,
        price: s.price,
        asset: s.asset,
        network: s.network,
        payTo: s.payTo,
        inputSchema: s.inputSchema,
      })),
    };
  }

  /** The x402 P&L: settled income, spend and net by tool or by UTC day, read by the worker that holds the ledger. */
  async pnl(options: PnlInput = {}): Promise<PnlResult> {
    const by = parseInput(pnlInput, options, 'pnl').by ?? 'tool';
    const read = await this.readThroughApi<PnlResult>(by === 'tool' ? READ_API_PATHS.pnlByTool : READ_API_PATHS.pnlByDay);
    if (read) return read;
    await this.requireWorker();
    return this.run({
      workflow: 'readPnlWorkflow',
      workflowId: `forge-query/pnl/${shortId()}`,
      kind: 'query',
      subject: 'pnl',
      args: [{ by }],
      summary: `Read the x402 P&L by ${by}`,
    });
  }

  /**
   * Runs re-verification now through the `forge-reverify` schedule and waits for the run's summary: every active
   * tool's stored test again, failures retested, what fails twice quarantined or degraded. A run already under way
   * (the schedule's, or another `reverifyNow`) is joined rather than doubled (the schedule's overlap policy is SKIP).
   */
  async reverifyNow(options: { onProgress?: ProgressListener; startTimeoutMs?: number } = {}): Promise<ReverifySummary> {
    const handle = this.temporal.schedule.getHandle(REVERIFY_SCHEDULE_ID);
    const before = await this.describeSchedule();
    let workflowId: string | undefined = before.info.runningActions[0]?.workflow.workflowId;
    if (!workflowId) {
      const seen = new Set(before.info.recentActions.map((a) => a.action.workflow.workflowId));
      await this.call(() => handle.trigger(ScheduleOverlapPolicy.SKIP));
      const deadline = Date.now() + (options.startTimeoutMs ?? 30_000);
      while (!workflowId) {
        const now = await this.describeSchedule();
        workflowId = [...now.info.runningActions.map((a) => a.workflow), ...now.info.recentActions.map((a) => a.action.workflow)].find(
          (w) => !seen.has(w.workflowId),
        )?.workflowId;
        if (workflowId) break;
        if (Date.now() > deadline)
          throw new Error(`reverifyNow: the schedule ${REVERIFY_SCHEDULE_ID} did not start a run within ${options.startTimeoutMs ?? 30_000} ms`);
        await new Promise((r) => setTimeout(r, 200));
      }
    }
    // The schedule's run, not this client's: left to go on should no worker poll.
    return this.waitWithProgress(this.temporal.workflow.getHandle<ForgeWorkflow<'reverifyToolsWorkflow'>>(workflowId), options.onProgress, {
      kind: 'reverify',
      subject: 'tools',
      startedHere: false,
    });
  }

  /** The `forge-reverify` schedule: interval, paused or not, the next runs, the last run and its summary's counts. */
  async reverifySchedule(): Promise<ReverifyScheduleInfo> {
    const d = await this.describeSchedule();
    const memo = (d.memo ?? {}) as { intervalMs?: number };
    const every = d.spec.intervals?.[0]?.every;
    const last = d.info.recentActions.at(-1);
    let lastRun: ReverifyScheduleInfo['lastRun'];
    if (last) {
      const run = this.temporal.workflow.getHandle<ForgeWorkflow<'reverifyToolsWorkflow'>>(last.action.workflow.workflowId);
      const status = await this.call(() => run.describe()).then(
        (r) => r.status.name,
        () => 'UNKNOWN',
      );
      lastRun = { workflowId: last.action.workflow.workflowId, startedAt: last.takenAt.toISOString(), status };
      if (status === 'COMPLETED') {
        const summary = await this.call(() => run.result()).catch(() => undefined);
        if (summary) {
          const { quarantined, degraded, flaky, counts, builtin } = summary;
          lastRun.summary = { quarantined, degraded, flaky, counts, ...(builtin ? { builtin } : {}) };
        }
      }
    }
    return {
      scheduleId: REVERIFY_SCHEDULE_ID,
      intervalMs: memo.intervalMs ?? (typeof every === 'number' ? every : 0),
      paused: d.state.paused,
      note: d.state.note || undefined,
      nextRuns: d.info.nextActionTimes.map((t) => t.toISOString()),
      lastRun,
      running: d.info.runningActions.map((a) => a.workflow.workflowId),
    };
  }

  /** Pauses the `forge-reverify` schedule (no scheduled runs until resumed; `reverifyNow` still runs one). */
  async pauseReverify(note = 'paused through Forge'): Promise<ReverifyScheduleInfo> {
    await this.describeSchedule();
    await this.call(() => this.temporal.schedule.getHandle(REVERIFY_SCHEDULE_ID).pause(note));
    return this.reverifySchedule();
  }

  /** Resumes the `forge-reverify` schedule. */
  async resumeReverify(note = 'resumed through Forge'): Promise<ReverifyScheduleInfo> {
    await this.describeSchedule();
    await this.call(() => this.temporal.schedule.getHandle(REVERIFY_SCHEDULE_ID).unpause(note));
    return this.reverifySchedule();
  }

  private async describeSchedule() {
    try {
      return await this.call(() => this.temporal.schedule.getHandle(REVERIFY_SCHEDULE_ID).describe());
    } catch (err) {
      if (err instanceof ScheduleNotFoundError) throw new ScheduleMissingError(REVERIFY_SCHEDULE_ID, { cause: err });
      throw err;
    }
  }

  /**
   * Recent Forge runs from Temporal's visibility, newest first: what `forge runs` shows an operator.
   * `kind` is a ForgeKind (deploy, migrate, ...); `status` a Temporal execution status (running, completed, failed,
   * canceled, terminated, timed_out).
   */
  async listRuns(filter: { kind?: string; status?: string; limit?: number } = {}): Promise<RunSummary[]> {
    const input = parseInput(listRunsInput, filter, 'listRuns');
    const clauses = ['ForgeKind IS NOT NULL'];
    if (input.kind) clauses.push(`ForgeKind = '${input.kind}'`);
    if (input.status) clauses.push(`ExecutionStatus = '${VISIBILITY_STATUS[input.status]}'`);
    const runs: RunSummary[] = [];
    await this.call(async () => {
      for await (const run of this.temporal.workflow.list({ query: clauses.join(' AND '), pageSize: input.limit })) {
        const attrs = run.typedSearchAttributes;
        runs.push({
          workflowId: run.workflowId,
          runId: run.runId,
          type: run.type,
          status: run.status.name,
          kind: attrs.get(ForgeKindKey),
          subject: attrs.get(ForgeSubjectKey),
          outcome: attrs.get(ForgeOutcomeKey),
          stage: attrs.get(ForgeStageKey),
          startTime: run.startTime.toISOString(),
          closeTime: run.closeTime?.toISOString(),
        });
        if (runs.length >= input.limit) break;
      }
    });
    return runs;
  }

  /** Everything Temporal knows of one Forge run: status, search attributes, live progress, result or failure. */
  async getRun(id: string): Promise<RunInfo> {
    const { workflowId } = parseInput(getRunInput, { workflowId: id }, 'getRun');
    const handle = this.temporal.workflow.getHandle(workflowId);
    let description: WorkflowExecutionDescription;
    try {
      description = await this.call(() => handle.describe());
    } catch (err) {
      if (err instanceof WorkflowNotFoundError) throw new RunNotFoundError(workflowId, { cause: err });
      throw err;
    }
    const attrs = description.typedSearchAttributes;
    const info: RunInfo = {
      workflowId,
      runId: description.runId,
      type: description.type,
      status: description.status.name,
      kind: attrs.get(ForgeKindKey),
      subject: attrs.get(ForgeSubjectKey),
      outcome: attrs.get(ForgeOutcomeKey),
      stage: attrs.get(ForgeStageKey),
      startTime: description.startTime.toISOString(),
      closeTime: description.closeTime?.toISOString(),
    };
    info.progress = await this.progressOf(handle);
    if (description.status.name === 'COMPLETED') info.result = await handle.result();
    else if (description.status.name !== 'RUNNING') {
      const err = await handle.result().then(
        () => undefined,
        (e: Error) => e,
      );
      const refused = refusedResult(err);
      if (refused !== undefined) info.result = refused;
      else if (err) info.failure = err.cause instanceof Error ? err.cause.message : err.message;
    }
    return info;
  }

  /**
   * A read answered by the read API of a worker of this platform (src/contract/read-api.ts), found through the
   * identities of the control queue's pollers, newest first, and asked with its token (src/process/read-api-token.ts);
   * undefined when this client holds no token or no read API answers it.
   */
  private async readThroughApi<T>(pathname: string): Promise<T | undefined> {
    const token = clientReadApiToken(this.readApi.home, this.readApi.token);
    if (token === undefined) return undefined;
    let pollers: proto.api.taskqueue.v1.IPollerInfo[];
    try {
      const described = await this.temporal.workflowService.describeTaskQueue({
        namespace: this.temporal.options.namespace,
        taskQueue: { name: this.taskQueue },
        taskQueueType: proto.api.enums.v1.TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW,
      });
      pollers = described.pollers ?? [];
    } catch {
      return undefined;
    }
    const seconds = (p: proto.api.taskqueue.v1.IPollerInfo) => Number(p.lastAccessTime?.seconds ?? 0);
    const urls = [...new Set(pollers.sort((a, b) => seconds(b) - seconds(a)).map((p) => readApiOf(p.identity)))];
    for (const url of urls) {
      if (!url) continue;
      try {
        const response = await fetch(`${url}${pathname}`, {
          headers: { authorization: `Bearer ${token}` },
          signal: AbortSignal.timeout(READ_API_TIMEOUT_MS),
        });
        if (response.ok) return (await response.json()) as T;
        // A 401 (a worker of another FORGE_HOME, whose token differs) or a read that failed: the next one, then the workflow.
        await response.body?.cancel();
      } catch {
        // Not reachable from here (another host's loopback, a worker gone): the next one, then the workflow.
      }
    }
    return undefined;
  }

  /** Starts the workflow registered as `type`, its options (arguments included) checked against that workflow. */
  private start<K extends ForgeWorkflowName>(type: K, options: WorkflowStartOptions<ForgeWorkflow<K>>) {
    return this.temporal.workflow.start<ForgeWorkflow<K>>(type, options);
  }

  /** Starts a workflow that answers quickly and waits for its result. */
  private async run<K extends ForgeWorkflowName>({
    workflow,
    workflowId,
    kind,
    subject,
    args,
    summary,
    details = [],
  }: QuickRun<K>): Promise<WorkflowResultType<ForgeWorkflow<K>>> {
    const handle = await this.call(() =>
      this.start(workflow, {
        taskQueue: this.taskQueue,
        workflowId,
        workflowTaskTimeout: WORKFLOW_TASK_TIMEOUT,
        args,
        typedSearchAttributes: searchAttributes(kind, subject),
        staticSummary: summary,
        // The Web UI's details (markdown): what the run was asked to do, beside its summary.
        ...(details.length > 0 ? { staticDetails: details.join('\n') } : {}),
        // `args` is the workflow's parameters (checked at every call of run()); TypeScript cannot resolve the SDK's
        // conditional options type for a `K` not yet known, so the object is asserted to it here.
      } as WorkflowStartOptions<ForgeWorkflow<K>>),
    );
    return this.awaitResult(handle);
  }

  /**
   * A run's result. A long wait outlives servers: while the service cannot be reached the wait tries again, with
   * backoff, for up to `waitThroughOutageMs` (the SDK's own retries give up after ~20 s), telling `onOutage` each time.
   */
  private async awaitResult<W extends Workflow>(handle: WorkflowHandle<W>, startedHere = true): Promise<WorkflowResultType<W>> {
    const afterMs = this.outage.failWithoutWorkerAfterMs;
    if (afterMs === undefined) return this.resultThroughOutages(handle);
    // The check runs beside the wait and only once the result is `afterMs` late: a run that answers quickly costs
    // nothing more.
    const stop = new AbortController();
    // A run withdrawn for want of a worker ends terminated: that end is the NoWorkerError's to report, not the wait's.
    let withdrawing = false;
    const result = this.resultThroughOutages(handle, stop.signal).catch((err: unknown) => {
      if (withdrawing) return new Promise<never>(() => undefined);
      throw err;
    });
    const withdraw = () => (withdrawing = true);
    try {
      return await Promise.race([result, this.failWhenNoWorker(handle, afterMs, startedHere ? withdraw : undefined, stop.signal)]);
    } finally {
      stop.abort();
    }
  }

  private async resultThroughOutages<W extends Workflow>(handle: WorkflowHandle<W>, signal?: AbortSignal): Promise<WorkflowResultType<W>> {
    const giveUpAfterMs = this.outage.waitThroughOutageMs ?? DEFAULT_WAIT_THROUGH_OUTAGE_MS;
    let since: number | undefined;
    for (let delayMs = 500; ; delayMs = Math.min(delayMs * 2, 5_000)) {
      try {
        return signal ? await this.resultInSlices(handle, signal) : await handle.result();
      } catch (err) {
        if (signal?.aborted) throw err;
        const refused = refusedResult(err);
        // The result a refused run carries is its workflow's result type (src/workflows/refusal.ts: `refused<R>`).
        if (refused !== undefined) return refused as WorkflowResultType<W>;
        const platform = toPlatformError(err, this.address);
        if (!(platform instanceof PlatformUnreachableError)) throw platform;
        since ??= Date.now();
        const unreachableMs = Date.now() - since;
        if (unreachableMs >= giveUpAfterMs) throw platform;
        this.outage.onOutage?.({ address: this.address, workflowId: handle.workflowId, unreachableMs, giveUpAfterMs });
        await new Promise((r) => setTimeout(r, delayMs));
      }
    }
  }

  /**
   * `handle.result()` that `signal` can cancel, waited for in slices of RESULT_WAIT_SLICE_MS, each on a signal of its
   * own: every long poll of the wait (one per ~20 s) leaves a listener on the signal it ran under (see
   * {@link withOwnSignal}), so one signal for a wait of minutes (a promotion, `forge reverify --now`) collected more
   * than ten.
   */
  private async resultInSlices<W extends Workflow>(handle: WorkflowHandle<W>, signal: AbortSignal): Promise<WorkflowResultType<W>> {
    for (;;) {
      // A slice ends by cancelling its call (not with a deadline: near one the server answers the long poll at once,
      // and result() then spins on new calls until it passes).
      const slice = new AbortController();
      const timer = setTimeout(() => slice.abort(), RESULT_WAIT_SLICE_MS);
      try {
        return await withOwnSignal(this.temporal, signal, () => handle.result(), slice);
      } catch (err) {
        // The slice is over, not the wait: the run goes on, the next slice waits on.
        if (slice.signal.aborted && !signal.aborted) continue;
        throw err;
      } finally {
        clearTimeout(timer);
      }
    }
  }

  /**
   * The workers polling a task queue (default: the control queue, where every Forge run starts): `polling` is false
   * when no Forge worker would take a run started now. One DescribeTaskQueue call.
   */
  async describeWorkers(taskQueue: string = this.taskQueue): Promise<WorkersInfo> {
    const namespace = this.temporal.options.namespace;
    const described = await this.call(() =>
      this.temporal.workflowService.describeTaskQueue({
        namespace,
        taskQueue: { name: taskQueue },
        taskQueueType: proto.api.enums.v1.TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW,
      }),
    );
    // The server lists a worker for minutes after its last poll (a killed one too); a live one polls again at least
    // once a minute (its long poll's timeout), so an older last access means a worker that is gone.
    const now = Date.now();
    const pollers = (described.pollers ?? [])
      .map((p) => ({ identity: p.identity ?? '', at: Number(p.lastAccessTime?.seconds ?? 0) * 1000 + Math.floor((p.lastAccessTime?.nanos ?? 0) / 1e6) }))
      .filter((p) => now - p.at < LIVE_POLLER_MS)
      .sort((a, b) => b.at - a.at)
      .map((p) => ({ identity: p.identity, lastAccessTime: new Date(p.at).toISOString() }));
    return { taskQueue, namespace, polling: pollers.length > 0, pollers };
  }

  /**
   * Rejects with a NoWorkerError once two checks NO_WORKER_CONFIRM_MS apart, the first `afterMs` into the wait, found
   * no worker polling the control queue; pending while one polls. A check the service does not answer counts for
   * nothing (reporting an outage is the result wait's), and right after one the absence must last longer: workers
   * come back to a restarted server with backoff.
   */
  private async failWhenNoWorker(handle: WorkflowHandle, afterMs: number, beforeWithdrawing: (() => void) | undefined, signal: AbortSignal): Promise<never> {
    await sleep(afterMs, undefined, { signal });
    let absentSince: number | undefined;
    let lastOutage = -Infinity;
    for (;;) {
      const workers = await this.describeWorkers().catch(() => undefined);
      if (signal.aborted) throw signal.reason;
      if (!workers) lastOutage = Date.now();
      if (!workers || workers.polling) absentSince = undefined;
      else {
        absentSince ??= Date.now();
        const confirmMs = Date.now() - lastOutage < 30_000 ? NO_WORKER_AFTER_OUTAGE_MS : NO_WORKER_CONFIRM_MS;
        if (Date.now() - absentSince >= confirmMs) throw await this.noWorker(handle, beforeWithdrawing);
      }
      await sleep(NO_WORKER_CONFIRM_MS, undefined, { signal });
    }
  }

  /**
   * The NoWorkerError for a run nobody works on. A run this client started (`beforeWithdrawing` given) whose first
   * workflow task no worker ever took (nothing of it ran) is withdrawn, so that it does not happen later behind the caller's back, after the caller
   * was told it did not; any other run is left to go on once a worker polls.
   */
  private async noWorker(handle: WorkflowHandle, beforeWithdrawing: (() => void) | undefined): Promise<NoWorkerError> {
    let withdrawn = false;
    if (beforeWithdrawing) {
      try {
        const d = await handle.describe();
        // Two events: WorkflowExecutionStarted and the first WorkflowTaskScheduled, which no worker took.
        if (d.status.name === 'RUNNING' && d.historyLength <= 2) {
          beforeWithdrawing();
          await handle.terminate('no Forge worker polled the task queue and the caller stopped waiting; nothing of this run had begun');
          withdrawn = true;
        }
      } catch {
        // Not withdrawn: the error says the run waits.
      }
    }
    return new NoWorkerError(this.taskQueue, this.temporal.options.namespace, this.address, handle.workflowId, withdrawn);
  }

  /**
   * With `failWithoutWorkerAfterMs` set, before a read starts its query run: a NoWorkerError (nothing started) when no
   * worker polls the control queue on two checks NO_WORKER_CONFIRM_MS apart.
   */
  private async requireWorker(): Promise<void> {
    if (this.outage.failWithoutWorkerAfterMs === undefined) return;
    for (let check = 1; ; check++) {
      const workers = await this.describeWorkers().catch(() => undefined);
      if (!workers || workers.polling) return;
      if (check >= 2) throw new NoWorkerError(this.taskQueue, workers.namespace, this.address, undefined, false);
      await sleep(NO_WORKER_CONFIRM_MS);
    }
  }

  private async waitWithProgress<W extends Workflow>(
    handle: WorkflowHandle<W>,
    onProgress: ProgressListener | undefined,
    run: { kind: ForgeKind; subject: string; startedHere?: boolean },
  ): Promise<WorkflowResultType<W>> {
    if (!onProgress) return this.awaitResult(handle, run.startedHere);
    let last = '';
    let latest: RunProgress | undefined;
    let done = false;
    // A query needs a worker: with the worker gone it waits out its timeout (a finished deployment's result was
    // printed ~60 s late). Once the result is in, the query in flight gets QUERY_GRACE_MS, then it is cancelled.
    const queries = new AbortController();
    let inFlight: Promise<unknown> | undefined;
    // A running stage's summary counts too: a migration waiting out a lock says there who holds it.
    const keyOf = (p: RunProgress): string =>
      JSON.stringify(p.steps.map((s) => [s.status, s.durationMs, s.status === 'running' ? s.summary : undefined])) + p.stage;
    const poll = async () => {
      while (!done) {
        const query = this.progressOf(handle, queries.signal);
        inFlight = query;
        const progress = await query;
        inFlight = undefined;
        if (progress && keyOf(progress) !== last && !done) {
          last = keyOf(progress);
          latest = progress;
          onProgress(progress);
        }
        await sleep(150, undefined, { signal: queries.signal }).catch(() => undefined);
      }
    };
    const polling = poll(); // progressOf never rejects
    try {
      const result = await this.awaitResult(handle, run.startedHere);
      done = true;
      // The query in flight is given a moment to be answered before it is cancelled: a live worker answers in
      // milliseconds, and one whose query was cancelled under it found the query gone and logged Core's "Query not
      // found when attempting to respond to it" warning in forge up's terminal, at the end of every deploy and
      // migrate. A worker that is gone does not answer: then the wait is cut short after the grace.
      if (inFlight) await Promise.race([inFlight, sleep(QUERY_GRACE_MS, undefined, { ref: false })]);
      queries.abort();
      await polling;
      // The last steps come from the result itself, which every run carries, not from one more query.
      const steps = stepsOf(result);
      if (steps) {
        const final: RunProgress = { ...(latest ?? run), stage: steps.at(-1)?.name ?? latest?.stage ?? '', steps, stages: steps };
        if (keyOf(final) !== last) onProgress(final);
      }
      return result;
    } finally {
      done = true;
      queries.abort();
    }
  }

  /** The run's `progress` query; undefined while no worker answers it, or once `signal` aborts it. */
  private async progressOf(handle: WorkflowHandle, signal?: AbortSignal): Promise<RunProgress | undefined> {
    try {
      const query = () => handle.query<RunProgress>('progress');
      // Its own signal per query: one every 150 ms under the wait's signal left one listener each on it.
      return withSteps(await (signal ? withOwnSignal(this.temporal, signal, query) : query()));
    } catch {
      return undefined;
    }
  }

  /** Runs a Temporal call, turning "nothing answers there" into one clear PlatformUnreachableError. */
  private async call<T>(fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (err) {
      if (err instanceof WorkflowExecutionAlreadyStartedError) throw err;
      const attribute = missingSearchAttributeOf(err);
      if (attribute !== undefined) throw await this.searchAttributesMissing(attribute, err);
      throw toPlatformError(err, this.address);
    }
  }

  /** Every one of Forge's search attributes the namespace lacks (`named`, the one the server named, at least). */
  private async searchAttributesMissing(named: string, cause: unknown): Promise<SearchAttributesMissingError> {
    const namespace = this.temporal.options.namespace;
    let registered: Set<string> | undefined;
    try {
      const listed = await this.temporal.connection.operatorService.listSearchAttributes({ namespace });
      registered = new Set(Object.keys(listed.customAttributes ?? {}));
    } catch {
      // Not allowed to list them (Temporal Cloud, a restricted key): the one the server named.
    }
    const missing: SearchAttributeSpec[] = Object.entries(FORGE_SEARCH_ATTRIBUTES)
      .filter(([name]) => (registered ? !registered.has(name) : name === named))
      .map(([name, type]) => ({ name, type }));
    if (missing.length === 0) missing.push({ name: named, type: (FORGE_SEARCH_ATTRIBUTES as Record<string, string>)[named] ?? 'Keyword' });
    return new SearchAttributesMissingError(missing, namespace, this.address, { cause });
  }
}

function promotionSettings(config: ForgeConfig, options: PromotionOptions): { taskQueue: string; repo: string } {
  return { taskQueue: options.promotion?.taskQueue ?? config.taskQueues.promote, repo: options.promotion?.repo ?? config.promotion.repo };
}

/** How long a read through a worker's read API may take before the next way is tried. */
const READ_API_TIMEOUT_MS = 5_000;

/** A poller whose last poll is older than this is gone: a live worker polls again within its long poll's minute. */
const LIVE_POLLER_MS = 75_000;
/** How long no worker must be seen before a client that asked not to wait gives up (two checks this far apart). */
const NO_WORKER_CONFIRM_MS = 1_500;
/** The same, within 30 s of a check the service did not answer. */
const NO_WORKER_AFTER_OUTAGE_MS = 15_000;

/**
 * The typed result a refused run carries (src/workflows/refusal.ts: the run ended FAILED with a ForgeRunRefused whose
 * details are its result), or undefined for any other end.
 */
function refusedResult(err: unknown): unknown {
  const cause = err instanceof WorkflowFailedError ? err.cause : undefined;
  return cause instanceof ApplicationFailure && cause.type === FailureType.runRefused ? cause.details?.[0] : undefined;
}

/**
 * The steps a run's result reports: every result's `steps`; a run that ended before results had them (issue 29) has
 * them as a migration's `stages` or a deployment's `diagnostics.stages`.
 */
function stepsOf(result: unknown): StageRecord[] | undefined {
  const r = result as { steps?: StageRecord[]; stages?: StageRecord[]; diagnostics?: { stages?: StageRecord[] } } | undefined;
  return r?.steps ?? r?.stages ?? r?.diagnostics?.stages;
}

/**
 * A progress report with both `steps` and its old name `stages`: a worker from before `steps` (issue 29) answers the
 * query with `stages` only.
 */
function withSteps(progress: RunProgress): RunProgress {
  const steps = (progress as Partial<RunProgress>).steps ?? progress.stages;
  return { ...progress, steps, stages: steps };
}

/**
 * A run's search attributes at its start. `firstStage`: the stage its workflow starts in, shown in the Web UI's list
 * from the start; the workflow then upserts no ForgeStage for it (src/workflows/progress.ts): an event fewer per run.
 */
function searchAttributes(kind: ForgeKind, subject: string, firstStage?: string) {
  return [{ key: ForgeKindKey, value: kind }, { key: ForgeSubjectKey, value: subject }, ...(firstStage ? [{ key: ForgeStageKey, value: firstStage }] : [])];
}

function parseInput<S extends z.ZodType>(schema: S, input: unknown, method: string): z.output<S> {
  const parsed = schema.safeParse(input);
  if (parsed.success) return parsed.data;
  const issues = parsed.error.issues.map((i) => ({ path: i.path.map(String), message: i.message }));
  throw new ForgeInputError(`${method}: ${issues.map((i) => `${i.path.join('.') || 'input'}: ${i.message}`).join('; ')}`, issues);
}

/**
 * What `pay` takes besides the URL (its schema: `payInput` in src/contract/inputs.ts). `maxAmount`: the most this
 * payment may cost, in base units (lowers the configured per-payment maximum). `idempotencyKey` (any text up to 200
 * characters): paying again with the same key, method, URL and body joins the first run (its result, once it ended)
 * instead of paying twice; without one, a fresh key is made and returned.
 */
export interface PayOptions extends Omit<PayOptionsInput, 'url'> {
  onProgress?: ProgressListener;
}

/** A pay run's ID: derived from what is paid for and the caller's key, so that a retry finds the first run. */
function payWorkflowId(input: PayInput, idempotencyKey: string): string {
  const digest = createHash('sha256')
    .update(canonicalJson({ method: input.method ?? 'GET', url: input.url, body: input.body ?? null, idempotencyKey }))
    .digest('hex');
  return `${PAY_WORKFLOW_PREFIX}${new URL(input.url).host}/${digest.slice(0, 24)}`;
}

// The SDK's pay() also takes the caller's progress listener, which is not part of the run's input.
const payInputSchema = payInput.extend({ onProgress: z.undefined() });

/** A short, sortable suffix for run IDs that are not derived from content (time, then randomness). */
function shortId(): string {
  return `${Date.now().toString(36)}-${randomBytes(3).toString('hex')}`;
}
