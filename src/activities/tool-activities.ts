import type { ToolQuarantine, ToolStore, ToolVersion } from '../db';
import { toolContentHash } from '../contract/hashes';
import { compileTool } from '../sandbox';
import { TypecheckCrashedError, TypecheckTimeoutError } from '../sandbox/errors';
import { sharedTypechecker, typeErrorsMessage, type TypecheckResult } from '../sandbox/typecheck';
import type { TypeCheckError, TypecheckMode } from '../contract/sandbox-verdict';
import { FORGE_OPERATION_NAMES, isToolName, toolNameMessage } from '../contract/tool-name';
import { type DeployToolWorkflowInput, type ListToolsResult, type TestHereResult, type ToolSummary, type VerdictSummary } from '../contract/tool-runs';
import type { StepCheckpoint } from '../contract/fault-points';
import { atCheckpoint } from '../contract/fault-points';
import { currentRun } from './current-run';
import { notFound, toolRejected } from './failures';

/**
 * The steps that prepareDeployment and commitAndPublish run inside themselves, not as activities of their own: each is
 * a fault point all the same (the chaos matrix's `commitVersion.after`), fired by the deps' checkpoint around it.
 */
export const TOOL_INNER_STEPS = ['validateDeployment', 'compileCheck', 'typecheckModule', 'commitVersion', 'publishTools'] as const;
export type ToolInnerStep = (typeof TOOL_INNER_STEPS)[number];

/** What the control-queue activities need; the worker passes real ones, tests may pass their own. */
export interface ToolActivityDeps {
  store: ToolStore;
  /** Names that belong to the agent's built-in tools or to Forge (the configuration's: defaults and FORGE_BUILTIN_TOOLS). */
  builtinTools: readonly string[];
  /**
   * The built-in names the agent repository's forge.verify.json declares, or undefined where there is no plan. They are
   * reserved too, beside `builtinTools` and Forge's operation names: a plan adds names, it never frees one (a plan that
   * lists its own tools once let `shell` and `read_file` deploy).
   */
  planBuiltinTools?: () => Promise<readonly string[] | undefined>;
  /** Largest source a deployment accepts. */
  maxSourceBytes: number;
  /** Writes the files of one stored version under agent-tools/ (atomic, never overwriting). */
  writeVersionFiles(row: ToolVersion): Promise<void>;
  /**
   * Makes agent-tools/ match the database's active pointers (files first, then the index): of `names` only, touching
   * nothing of the other tools, or of every tool when no names are given.
   */
  publish(names?: readonly string[]): Promise<{ generation: number; tools: number }>;
  /**
   * Where and how long this platform runs sandbox tests (the worker's configuration is the authority); `here`: a
   * deployment tries its test where its workflow task runs first (FORGE_SANDBOX_TEST_HERE).
   */
  sandbox: SandboxPlacement;
  /**
   * FORGE_TYPECHECK: `error` rejects a tool with type errors at stage `typecheck`, `warn` reports them and goes on,
   * `off` skips the checker. Default `error`. The worker warms the checker up once it polls (src/worker.ts).
   */
  typecheck?: TypecheckMode;
  /** The checker (default: the process's warm one); tests may pass their own. */
  typechecker?: { check(source: string, name: string): Promise<TypecheckResult> };
  /** Called around each of TOOL_INNER_STEPS where an activity runs it (a worker armed with fault points passes one). */
  checkpoint?: StepCheckpoint<ToolInnerStep>;
  /**
   * Begins the deployment's test here while prepareDeployment type-checks, for the next step to take
   * (SandboxActivities.startTestEarly); undefined when it began nothing. Only where the test runs here (`sandbox.here`).
   */
  startTestEarly?(input: { name: string; source: string; testInput: unknown }): { cancel(reason: string): void } | undefined;
  /**
   * Ends the deployment in its first step when the test begun early passes within a short wait: takes its verdict and
   * commits (deploy-here.ts, firstStepFinisher); undefined leaves both to the next step.
   */
  finishHere?(input: TestAndCommitInput): Promise<TestAndCommitHereResult | undefined>;
}

export interface SandboxPlacement {
  taskQueue: string;
  maxTimeoutMs: number;
  here?: boolean;
}

export interface ValidateResult {
  /**
   * The sandbox task queue and time limit of this platform, and whether it tests here first, recorded in the history
   * so the run replays alike (without `here`, the test goes to the sandbox queue).
   */
  sandbox: SandboxPlacement;
  activeVersion?: number;
  /** The content equals the active version's: the deployment is a no-op. */
  unchanged: boolean;
  /**
   * This very run committed and activated the content before (its step runs again: the worker died after the commit,
   * before Temporal recorded the step), as this version. The checks that let that commit through are not run again.
   */
  committedByThisRun?: number;
}

/** What the typecheck stage found in a module it let through (none with `error`; any number with `warn`). */
export interface TypecheckSummary {
  mode: 'error' | 'warn';
  errors: TypeCheckError[];
  /** Errors beyond those listed. */
  truncated: number;
  durationMs: number;
  /** With `warn`, why the checker gave no answer (it timed out or failed), the module going on unchecked. */
  unchecked?: string;
  /** Not checked again: the check this run passed before its commit stands (ValidateResult.committedByThisRun). */
  beforeCommit?: true;
}

export interface PrepareResult extends ValidateResult {
  validateMs: number;
  /** Absent when the content is unchanged (nothing to compile). */
  compile?: { compiledBytes: number; warnings: string[]; durationMs: number };
  /** Absent when the content is unchanged and with FORGE_TYPECHECK=off (the workflow then reports no such stage). */
  typecheck?: TypecheckSummary;
  /**
   * The test begun in this step passed within its short wait, and this step went on to commit (ToolActivityDeps.finishHere):
   * the verdict, with the commit or the `commitError` that leaves the commit to a step of its own. Absent otherwise,
   * and in every run recorded before it existed, which so replay as they ran.
   */
  finishedHere?: TestAndCommitHereResult & { verdict: VerdictSummary };
}

export interface CommitInput {
  name: string;
  source: string;
  testInput: unknown;
  description?: string;
  contentHash: string;
  verdict: VerdictSummary;
  workflowId: string;
  /** The run of `workflowId`: commitAndPublish passes its own, which the activation's event records. */
  runId?: string;
}

export interface CommitResult {
  version: number;
  previousVersion?: number;
  /** False when this exact content was already stored (a retried activity, or redeploying an earlier version). */
  created: boolean;
}

export interface CommitAndPublishResult extends CommitResult {
  commitMs: number;
  publishMs: number;
  generation: number;
}

/** What testAndCommitHere (deploy-here.ts) is given: a commit's input before the test gave it a verdict. */
export type TestAndCommitInput = Omit<CommitInput, 'verdict' | 'runId'>;

/**
 * What testAndCommitHere did: `busy` (no free slot here: nothing ran), or the passing verdict with the commit it made,
 * or with `commitError` when the commit failed (the workflow then runs commitAndPublish as its own step).
 */
export type TestAndCommitHereResult = TestHereResult & { committed?: CommitAndPublishResult; commitError?: string };

/**
 * A deployment's inner steps (TOOL_INNER_STEPS): the single steps that the combined activities below run in one local
 * activity each (see prepareDeployment for why). They are not activities: not registered with the worker, and no
 * workflow calls them; the combined activities call them between the checkpoint's moments. (Workflow-side, `toolSteps`
 * in src/workflows/activity-options.ts is something else: the proxy through which workflows call the tool activities.)
 */
export function createToolInnerSteps(deps: ToolActivityDeps) {
  const { store } = deps;
  const mode = deps.typecheck ?? 'error';
  const typechecker = deps.typechecker ?? (mode === 'off' ? undefined : sharedTypechecker());
  return {
    /**
     * Checks what can be checked without running anything: the name, reserved names, size, the content hash, and
     * whether the content is already the active version. Idempotent (reads only); nothing to compensate.
     */
    async validateDeployment(input: DeployToolWorkflowInput, run?: { workflowId: string; runId: string }): Promise<ValidateResult> {
      const refuse = (message: string) => toolRejected({ stage: 'validate', verdict: 'refused', message });
      if (!isToolName(input.name)) throw refuse(toolNameMessage(input.name));
      const fromPlan = (await deps.planBuiltinTools?.()) ?? [];
      const reserved = new Set<string>([...deps.builtinTools, ...FORGE_OPERATION_NAMES, ...fromPlan]);
      if (reserved.has(input.name)) {
        throw refuse(`"${input.name}" is the name of a built-in tool; choose another name`);
      }
      if (input.source.trim() === '') throw refuse('the source is empty');
      const bytes = Buffer.byteLength(input.source, 'utf8');
      if (bytes > deps.maxSourceBytes) throw refuse(`the source is ${bytes} bytes, over the ${deps.maxSourceBytes}-byte limit`);
      if (toolContentHash(input) !== input.contentHash) {
        throw refuse('the content hash does not match the submission; resubmit through the Forge client');
      }
      const active = await store.getActiveWithHash(input.name);
      if (!active) return { sandbox: deps.sandbox, unchanged: false };
      const unchanged = active.contentHash === input.contentHash;
      // Identical to the active version because this very run activated it: its workflow task was lost after the
      // commit (a worker killed while the whole run was one task), and the run starts again. It goes on, and its
      // commit reports what the lost attempt did, as an uninterrupted run would have.
      if (unchanged && run) {
        const ours = await store.activationOfRun(input.name, run.workflowId);
        if (ours?.runId === run.runId && ours.version === active.version)
          return { sandbox: deps.sandbox, activeVersion: ours.previousVersion, unchanged: false, committedByThisRun: ours.version };
      }
      return { sandbox: deps.sandbox, activeVersion: active.version, unchanged };
    },

    /**
     * The sandbox verdict this very run committed the content with, when it did (its step runs again after the commit:
     * the worker died before Temporal recorded it); otherwise undefined. A test that passed and was committed is not
     * run again: a tool whose test passes once and then fails would turn the run of an active version into a
     * rejection. Reads only.
     */
    async verdictOfOwnCommit(input: { name: string; contentHash: string; workflowId: string }): Promise<VerdictSummary | undefined> {
      const run = currentRun();
      if (!run) return undefined;
      const ours = await store.activationOfRun(input.name, input.workflowId);
      if (!ours || ours.runId !== run.runId) return undefined;
      const row = await store.getVersion(input.name, ours.version);
      return row?.contentHash === input.contentHash ? (row.verdict as VerdictSummary) : undefined;
    },

    /** Compiles the source in memory to find syntax and transform errors early. Idempotent; nothing to compensate. */
    async compileCheck(input: { name: string; source: string }): Promise<{ compiledBytes: number; warnings: string[] }> {
      const compiled = await compileTool(input.source, input.name);
      if (!compiled.ok) {
        throw toolRejected({
          stage: 'compile',
          verdict: 'failed',
          message: `the source does not compile: ${compiled.errors[0].message}`,
          compileErrors: compiled.errors,
        });
      }
      return { compiledBytes: Buffer.byteLength(compiled.code), warnings: compiled.warnings };
    },

    /**
     * Runs the TypeScript checker over the module with the installed types (FORGE_TYPECHECK). With `error`, type
     * errors are a `typecheck` rejection carrying each error's location and TS code; so is a check that times out or
     * that the checker fails on. With `warn`, all of that is reported and the deployment goes on; with `off`, nothing
     * runs (undefined). Idempotent (reads only); nothing to compensate.
     */
    async typecheckModule(input: { name: string; source: string }, committedByThisRun?: number): Promise<TypecheckSummary | undefined> {
      if (mode === 'off' || !typechecker) return undefined;
      // This run's commit of this content happened, so its check found no error: checking again could only turn a
      // committed version's run into a rejection (a check that times out on a loaded worker). With `warn`, what it
      // found is in the result, so it runs again.
      if (committedByThisRun !== undefined && mode === 'error') return { mode, errors: [], truncated: 0, durationMs: 0, beforeCommit: true };
      const started = performance.now();
      let result: TypecheckResult;
      try {
        result = await typechecker.check(input.source, input.name);
      } catch (err) {
        const verdict = err instanceof TypecheckTimeoutError ? 'timeout' : err instanceof TypecheckCrashedError ? 'crashed' : undefined;
        // Anything else (the checker was restarted under this check) is worth another try: the step is retried.
        if (!verdict) throw err;
        const message = `${(err as Error).message}; FORGE_TYPECHECK=warn deploys without waiting for it, =off skips it`;
        if (mode === 'warn') return { mode, errors: [], truncated: 0, durationMs: Math.round(performance.now() - started), unchecked: message };
        throw toolRejected({ stage: 'typecheck', verdict, message });
      }
      if (result.errors.length > 0 && mode === 'error') {
        throw toolRejected({ stage: 'typecheck', verdict: 'failed', message: typeErrorsMessage(result), typeErrors: result.errors });
      }
      return { mode, errors: result.errors, truncated: result.truncated, durationMs: result.durationMs };
    },

    /**
     * Persists the tested version and makes it active in ONE transaction under the tool's row lock, then writes its
     * files. The single transaction is what serialises deployments of one tool: they may test concurrently, but their
     * state changes never interleave, and versions only go up. Idempotent on (name, content hash): a retry finds the
     * version stored and active and changes nothing. Compensated by `restoreActive` with the version active before.
     */
    async commitVersion(input: CommitInput): Promise<CommitResult> {
      // Compiled again rather than carried from the compile step: esbuild is deterministic and fast, and this keeps
      // megabytes of JavaScript out of the workflow history.
      const compiled = await compileTool(input.source, input.name);
      if (!compiled.ok) throw new Error(`compiling ${input.name} failed at commit although it passed before: ${compiled.errors[0].message}`);
      const result = await store.commitVersion(
        {
          name: input.name,
          contentHash: input.contentHash,
          sourceTs: input.source,
          compiledJs: compiled.code,
          testInput: input.testInput,
          // The caller's --description, else the one the tool's own module declares (read by the sandbox as it ran).
          description: input.description || input.verdict.diagnostics?.tool?.description,
          verdict: input.verdict,
          workflowId: input.workflowId,
        },
        { workflowId: input.workflowId, runId: input.runId },
      );
      await deps.writeVersionFiles(result.row);
      return { version: result.version, previousVersion: result.previousVersion, created: result.created };
    },
  };
}

export type ToolInnerSteps = ReturnType<typeof createToolInnerSteps>;

/**
 * The control-queue activities of tool deployment, rollback and deletion. Each is a thin adapter over the store and
 * the sandbox's compiler; each is idempotent as its TSDoc says, so Temporal may retry any of them.
 */
export function createToolActivities(deps: ToolActivityDeps, innerSteps: ToolInnerSteps = createToolInnerSteps(deps)) {
  const { store } = deps;
  const step = <T>(name: ToolInnerStep, run: () => Promise<T>) => atCheckpoint(deps.checkpoint, name, run);

  // Temporal calls activities as plain functions (no `this`), so commitAndPublish reaches publishTools through this
  // object by name.
  const activities = {
    /**
     * validateDeployment, compileCheck then typecheckModule, in one local activity: each local activity costs the
     * workflow a few milliseconds of scheduling, a noticeable share of a deployment, and a stage inside an existing
     * step adds no command to the workflow's history. Reports each step's own time for the progress view. Where the
     * test runs here, it begins once the source compiles, beside the type check (deps.startTestEarly), and
     * testAndCommitHere takes its verdict: in this step when the test passes soon after the check (deps.finishHere,
     * which commits: `finishedHere`), else in the next. A refusal kills it. Idempotent as testAndCommitHere is; the
     * workflow compensates a commit made here as one made there.
     */
    async prepareDeployment(input: DeployToolWorkflowInput): Promise<PrepareResult> {
      const t0 = performance.now();
      const validated = await step('validateDeployment', () => innerSteps.validateDeployment(input, currentRun()));
      const validateMs = Math.round(performance.now() - t0);
      if (validated.unchanged) return { ...validated, validateMs };
      const t1 = performance.now();
      const compiled = await step('compileCheck', () => innerSteps.compileCheck(input));
      const compile = { ...compiled, durationMs: Math.round(performance.now() - t1) };
      // The test begins now, beside the type check (a checker thread and a sandbox process: two cores), unless this
      // run committed already (its test passed then and is not run again).
      const early =
        deps.startTestEarly && deps.sandbox.here && validated.committedByThisRun === undefined
          ? deps.startTestEarly({ name: input.name, source: input.source, testInput: input.testInput })
          : undefined;
      const t2 = performance.now();
      let typecheck: TypecheckSummary | undefined;
      try {
        typecheck = await step('typecheckModule', () => innerSteps.typecheckModule(input, validated.committedByThisRun));
      } catch (err) {
        // Refused (or the check failed): the test begun for this content is killed now, not left to run out.
        early?.cancel(`the deployment's first step failed: ${(err as Error).message}`);
        throw err;
      }
      const prepared: PrepareResult = {
        ...validated,
        validateMs,
        compile,
        ...(typecheck ? { typecheck: { ...typecheck, durationMs: Math.round(performance.now() - t2) } } : {}),
      };
      // The test begun here may be about to pass: then this step ends the deployment (see finishHere).
      const finishHere = early ? deps.finishHere : undefined;
      const run = currentRun();
      if (!finishHere || !run) return prepared;
      const { name, source, testInput, description, contentHash } = input;
      const finished = await finishHere({ name, source, testInput, description, contentHash, workflowId: run.workflowId });
      return finished?.verdict ? { ...prepared, finishedHere: { ...finished, verdict: finished.verdict } } : prepared;
    },

    /**
     * Brings agent-tools/ up to date with the database (files, then the active pointers) for `input.names`: a run's
     * own tool, touching nothing of the others. The database has already sent its NOTIFY with the commit. Idempotent;
     * nothing to compensate.
     */
    async publishTools(input: { names: string[] }): Promise<{ generation: number; tools: number }> {
      return deps.publish(input.names);
    },

    /**
     * commitVersion then publishTools, in one local activity (see prepareDeployment for why). A retry after a
     * failed publish finds the commit done (idempotent) and publishes again. Compensated by `restoreActive`.
     */
    async commitAndPublish(input: CommitInput): Promise<CommitAndPublishResult> {
      const t0 = performance.now();
      const committed = await step('commitVersion', () => innerSteps.commitVersion({ ...input, runId: currentRun()?.runId }));
      const t1 = performance.now();
      // This tool's pointer only: what a deployment writes and reads of agent-tools/ does not grow with the tools.
      const published = await step('publishTools', () => activities.publishTools({ names: [input.name] }));
      return { ...committed, commitMs: Math.round(t1 - t0), publishMs: Math.round(performance.now() - t1), generation: published.generation };
    },

    /**
     * Compensation: makes `version` active again, or deactivates the tool when there was none, then publishes — but
     * only while `onlyIfActive` (the version the failed run activated) is still the active one: a deployment that
     * committed since must not be undone. The check and the move are one transaction under the tool's lock.
     * Idempotent.
     */
    async restoreActive(input: { name: string; version?: number; onlyIfActive?: number; workflowId: string }): Promise<void> {
      await store.restoreActive(
        input.name,
        { version: input.version, ifActive: input.onlyIfActive },
        { workflowId: input.workflowId, runId: currentRun()?.runId },
      );
      await deps.publish([input.name]);
    },

    /**
     * Makes an earlier version active: `toVersion`, or the newest stored version below the active one. Idempotent by
     * its run: an attempt that runs again after this run's activation committed (a worker killed before Temporal
     * recorded the step) reports that activation and moves nothing, however the state looks now.
     */
    async activateEarlierVersion(input: { name: string; toVersion?: number; workflowId: string }): Promise<{ version: number; previousVersion?: number }> {
      const earlier = await store.activationOfRun(input.name, input.workflowId);
      if (earlier) return { version: earlier.version, previousVersion: earlier.previousVersion };
      const versions = await store.listVersions(input.name);
      if (versions.length === 0) throw notFound(`there is no tool named "${input.name}"`);
      const active = await store.getActive(input.name);
      let target: number;
      if (input.toVersion !== undefined) {
        if (!versions.some((v) => v.version === input.toVersion)) {
          throw notFound(`"${input.name}" has no version ${input.toVersion}; stored versions: ${versions.map((v) => v.version).join(', ')}`);
        }
        target = input.toVersion;
      } else {
        const below = versions.filter((v) => active === undefined || v.version < active.version);
        if (below.length === 0) {
          // Only a newer stored version could be chosen with --to; with none, a rollback cannot help: say what can.
          const newer = versions.filter((v) => active !== undefined && v.version > active.version).map((v) => v.version);
          throw notFound(
            newer.length > 0
              ? `"${input.name}" has no version older than the active v${active?.version}; --to ${newer.at(-1)} makes a newer stored one active`
              : `"${input.name}" has only v${active?.version ?? versions[0].version}, nothing to roll back to; deploy a changed version, or delete the tool`,
          );
        }
        target = below[below.length - 1].version;
      }
      const result = await store.activate(input.name, target, { workflowId: input.workflowId });
      return { version: target, previousVersion: result.changed ? result.previousVersion : active?.version };
    },

    /**
     * Deactivates the tool and deletes its stored versions (the version counter stays). Idempotent by its run: an
     * attempt that finds nothing because this run removed it reports that removal.
     */
    async removeTool(input: { name: string; workflowId: string }): Promise<{ previousVersion?: number; removedVersions: number }> {
      const result = await store.removeTool(input.name, { workflowId: input.workflowId });
      return { previousVersion: result.previousVersion, removedVersions: result.removedVersions };
    },

    /**
     * The tools with their state: active ones (`degraded` where re-verification made an older version active), and
     * the ones re-verification quarantined (no version active). Read-only.
     */
    async listTools(): Promise<ListToolsResult> {
      const active = await store.listActive();
      const moved = new Map((await store.listQuarantined()).map((q) => [q.name, q]));
      const tools: ToolSummary[] = [];
      const reverification = (q: ToolQuarantine) => ({
        failedVersion: q.failedVersion,
        reason: q.reason as Record<string, unknown>,
        at: new Date(q.at).toISOString(),
        workflowId: q.workflowId ?? undefined,
      });
      for (const pointer of active) {
        const versions = await store.listVersions(pointer.name);
        const row = versions.find((v) => v.version === pointer.version);
        const q = moved.get(pointer.name);
        const degraded = q?.state === 'degraded' && q.activeVersion === pointer.version;
        tools.push({
          name: pointer.name,
          activeVersion: pointer.version,
          status: degraded ? 'degraded' : 'active',
          ...(degraded ? { reverification: reverification(q) } : {}),
          updatedAt: new Date(pointer.updatedAt).toISOString(),
          description: row?.description || undefined,
          contentHash: row?.contentHash ?? '',
          versions: versions.length,
        });
      }
      const activeNames = new Set(active.map((p) => p.name));
      for (const q of moved.values()) {
        if (q.state !== 'quarantined' || activeNames.has(q.name)) continue;
        const versions = await store.listVersions(q.name);
        const row = versions.find((v) => v.version === q.failedVersion);
        tools.push({
          name: q.name,
          activeVersion: null,
          status: 'quarantined',
          reverification: reverification(q),
          updatedAt: new Date(q.at).toISOString(),
          description: row?.description || undefined,
          contentHash: row?.contentHash ?? '',
          versions: versions.length,
        });
      }
      tools.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
      return { tools };
    },
  };
  return activities;
}

export type ToolActivities = ReturnType<typeof createToolActivities>;
