import { randomBytes } from 'node:crypto';
import { chown, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { compileTool } from './compile';
import { ContainedProcess, launcherSaid } from './contained-process';
import { FrameChannel } from './frames';
import { resolveLimits, type SandboxLimits } from './limits';
import { INTERNET, planNetwork } from './network';
import { runnableModule, type RunnableModule } from './module-format';
import { harnessNodeFlags } from './harness-snapshot';
import { harnessPath, projectNodeModules, sandboxTempRoot } from './paths';
import { removeRunDir } from './remove-run-dir';
import { runDirPrefix, sweepOrphanedRunDirs } from './run-dirs';
import { releaseRunUser, removeRunUserFiles, takeRunUser } from './run-user';
import { TailBuffer } from './tail-buffer';
import { Supervision, type Ending, type Settled } from './supervision';
import { SANDBOX_STATUSES, type SandboxDiagnostics, type SandboxStatus, type SandboxVerdict } from './verdict';
import { isToolName, toolNameMessage } from '../contract/tool-name';

export interface SandboxRequest {
  /** The name the tool is deployed under; the module's `name` must equal it. */
  name: string;
  /** The TypeScript module's source. */
  source: string;
  /** The input `execute` is called with (after `inputSchema` accepts it). */
  input?: unknown;
  /** Already-compiled ES module code for `source` (skips the compile step; the registry passes persisted JS). */
  compiledJs?: string;
  limits?: Partial<SandboxLimits>;
  /** Aborting ends the run as `timeout` with the whole tree killed (Temporal cancellation arrives this way). */
  signal?: AbortSignal;
}

/**
 * Compiles, loads and runs one tool module in a fresh, bounded child process and returns its verdict. Never throws:
 * every way a run can end, including a failure of the sandbox machinery itself, is one of the verdicts, and the whole
 * process tree and the run's temp directory are gone before it resolves.
 */
export async function runSandbox(request: SandboxRequest, options: { pool?: SpareHarnesses } = {}): Promise<SandboxVerdict> {
  const started = performance.now();
  const elapsed = () => Math.round(performance.now() - started);
  const limits = resolveLimits(request.limits);
  try {
    const refused = checkRequest(request, limits);
    if (refused) return { status: 'invalid', durationMs: elapsed(), error: refused.error, diagnostics: refused.diagnostics };
    let code = request.compiledJs;
    if (code === undefined) {
      const compiled = await compileTool(request.source, request.name);
      if (!compiled.ok) {
        const first = compiled.errors[0];
        return {
          status: 'failed',
          durationMs: elapsed(),
          error: `the source does not compile: ${first.message}${compiled.errors.length > 1 ? ` (and ${compiled.errors.length - 1} more)` : ''}`,
          diagnostics: { phase: 'compile', compileErrors: compiled.errors },
        };
      }
      code = compiled.code;
    }
    const runnable = await runnableModule(code);
    // What the module imports, and in which form it loads them: what the pool's next spares preload.
    options.pool?.learn(code, runnable.format);
    const outcome = await runInChild(request, runnable, limits, options.pool);
    return { ...outcome, durationMs: elapsed() };
  } catch (err) {
    // The machinery failed (ENOSPC, EMFILE, a missing binary): still a verdict, and the caller decides whether an
    // infrastructure failure is worth a retry.
    return {
      status: 'crashed',
      durationMs: elapsed(),
      error: `the sandbox could not run the tool: ${(err as Error).message}`,
      diagnostics: { phase: 'process' },
    };
  }
}

function checkRequest(request: SandboxRequest, limits: SandboxLimits): Omit<SandboxVerdict, 'status' | 'durationMs'> | undefined {
  if (!isToolName(request.name)) {
    return {
      error: toolNameMessage(request.name),
      diagnostics: { phase: 'request' },
    };
  }
  if (typeof request.source !== 'string') return { error: 'the source must be a string', diagnostics: { phase: 'request' } };
  const bytes = Buffer.byteLength(request.source, 'utf8');
  if (bytes > limits.sourceBytes) {
    return {
      error: `the source is ${bytes} bytes, over the ${limits.sourceBytes}-byte limit`,
      diagnostics: { phase: 'request', limit: { kind: 'sourceBytes', value: limits.sourceBytes } },
    };
  }
  if (request.input !== undefined) {
    try {
      JSON.stringify(request.input);
    } catch (err) {
      return { error: `the test input is not JSON: ${(err as Error).message}`, diagnostics: { phase: 'request' } };
    }
  }
  return undefined;
}

type Outcome = Omit<SandboxVerdict, 'durationMs'>;

async function runInChild(request: SandboxRequest, code: RunnableModule, limits: SandboxLimits, pool?: SpareHarnesses): Promise<Outcome> {
  const spare = pool?.take(limits);
  if (spare) {
    const outcome = await runOn(spare, true, request, code, limits);
    // The spare died before it read the run (killed from outside while it waited): the tool never ran, so it gets a
    // fresh process instead of a verdict about someone else's death.
    if (outcome !== 'lost') return outcome;
  }
  // Its own process from the pool's snapshot, unless a spare from it was just lost. One from a snapshot that ends before
  // it reads the run (a blob damaged since it was checked) is lost the same way, and the run gets a plain process.
  const own = spare?.snapshot ? {} : (pool?.ownBoot?.(limits) ?? {});
  if (own.snapshot) {
    const outcome = await runOn(await bootHarness(limits, own), true, request, code, limits);
    if (outcome !== 'lost') return outcome;
  }
  return (await runOn(await bootHarness(limits), false, request, code, limits)) as Outcome;
}

/** One run on one harness; its directory is removed afterwards. */
async function runOn(
  harness: BootedHarness,
  mayBeLost: boolean,
  request: SandboxRequest,
  module: RunnableModule,
  limits: SandboxLimits,
): Promise<Outcome | 'lost'> {
  try {
    const modulePath = join(harness.dir, module.format === 'cjs' ? 'tool.cjs' : 'tool.mjs');
    // A fresh harness is still booting while this is written: it learns the module's path only from the init line,
    // sent once this is done.
    // 'wx': created here, never through something already at that path (a symlink planted by a tool that shares the
    // run's uid by chance would otherwise have root write through it).
    return await superviseRun(harness, mayBeLost, request, modulePath, writeFile(modulePath, module.code, { flag: 'wx' }), limits);
  } finally {
    await releaseHarness(harness);
  }
}

/**
 * A contained harness process, started and blocked reading its one run from fd 3 (it has run no tool code and
 * never will run another's): what {@link superviseRun} hands a run to, fresh or taken from a pool's spares
 * ({@link SpareHarnesses}).
 */
export interface BootedHarness {
  /** The harness's process tree: its launch, its memory cgroup, its pipes, how it ended. */
  contained: ContainedProcess;
  /** Its private directory (cwd, HOME, TMPDIR; the module is written here). */
  dir: string;
  /** The user the harness switches to before loading the tool (undefined: it keeps Forge's). */
  uid?: number;
  /** The startup snapshot it started from (harness-snapshot.ts), if any. */
  snapshot?: string;
}

/**
 * Where a run may take a harness started ahead of it: a SandboxPool (src/sandbox/pool.ts), which starts its spares
 * with {@link bootHarness}. Declared here rather than imported from the pool, so that the two files are no circle.
 */
export interface SpareHarnesses {
  /** Notes what a run's module (its compiled ES module) imports and the form it runs in, for the spares started from now on. */
  learn(code: string, format: RunnableModule['format']): void;
  /** A started harness for a run with these limits, or undefined (none ready, or other boot-time limits). */
  take(limits: SandboxLimits): BootedHarness | undefined;
  /** How a run that got no spare starts its own process (a snapshot to start from), if the pool has a say. */
  ownBoot?(limits: SandboxLimits): { snapshot?: string };
}

/**
 * Starts a harness (private directory, contained process) without a run; the run comes later on fd 3. `preload`: the
 * package entry files it loads while it waits (a pool's spares: src/sandbox/preload.ts). `snapshot`: a checked startup
 * snapshot (harness-snapshot.ts) to start from, made for these limits' flags, holding packages already loaded.
 */
export async function bootHarness(limits: SandboxLimits, options: { preload?: string[]; snapshot?: string } = {}): Promise<BootedHarness> {
  const root = sandboxTempRoot(limits.tmpDir);
  void sweepOrphanedRunDirs(root); // once per process: what killed workers left here
  const dir = await mkdtemp(join(root, runDirPrefix()));
  const uid = takeRunUser(limits);
  try {
    // Bare imports (zod, viem, ...) resolve from the project's installed packages, as the contract says. The
    // package.json ends Node's search for the tool's package scope here: without it Node would go on to the parent,
    // /dev/shm, where any run can write a package.json that names itself `zod` (a self-reference wins over
    // node_modules) and so have its code loaded by another run.
    await symlink(projectNodeModules(), join(dir, 'node_modules'), 'dir');
    await writeFile(join(dir, 'package.json'), '{"private":true}\n', { flag: 'wx' });
    // The run's user owns its directory (mode 0700 from mkdtemp) and nothing else.
    if (uid !== undefined) await chown(dir, uid, uid);
    // From a snapshot, the harness is its main function (harness-snapshot-entry.cjs), with the same arguments.
    const start = options.snapshot ? ['--snapshot-blob', options.snapshot] : [harnessPath()];
    const nodeArgs = [...harnessNodeFlags(limits), ...start, ...(options.preload ?? [])];
    // All of the run's processes together get what one of them may address.
    const memoryBytes = (limits.memoryMb + limits.virtualOverheadMb) * 1024 * 1024;
    const contained = ContainedProcess.start({
      argv: [process.execPath, ...nodeArgs],
      cwd: dir,
      env: childEnvironment(dir, limits),
      memoryBytes,
      addressSpaceBytes: memoryBytes,
      maxProcesses: limits.maxProcesses,
      // The harness runs nothing of the tool's before it reads the run, which is sent once it has joined.
      joinCgroup: 'while-booting',
      channel: true,
      containment: limits.containment,
      cgroup: limits.cgroup,
      // Its directory, the harness and the packages a tool may import: nothing else of the host's but the system.
      view: {
        writable: [dir],
        // A snapshot's blob read-only, like the harness: every later run starts from it.
        readable: [dirname(harnessPath()), projectNodeModules(), ...(options.preload ?? []), ...(options.snapshot ? [options.snapshot] : [])],
        cwd: dir,
        switchesUser: uid !== undefined,
      },
      network: await planNetwork(limits.network ?? INTERNET),
    });
    return { contained, dir, uid, snapshot: options.snapshot };
  } catch (err) {
    releaseRunUser(uid);
    await rm(dir, { recursive: true, force: true });
    throw err;
  }
}

/** Kills a harness that never got a run and removes its directory. */
export async function disposeHarness(harness: BootedHarness): Promise<void> {
  await harness.contained.kill().catch(() => undefined);
  await releaseHarness(harness);
}

/**
 * What a harness held beside its processes (its tree is dead by now): its directory, its cgroup, and its uid with
 * whatever that user left in the shared writable directories.
 */
async function releaseHarness(harness: BootedHarness): Promise<void> {
  await removeRunDir(harness.dir);
  await harness.contained.release();
  const { uid } = harness;
  if (uid === undefined) return;
  // The namespace modes run the tree in its filesystem view (filesystem-view.ts): its /tmp and /var/tmp are its own
  // tmpfs, gone with it, the host's /dev/shm and /run/lock are not in it, and of the host's only its directory is
  // writable. Nothing of its user's can be anywhere else, so there is nothing to look for: the scan below reads every
  // entry of the shared directories after each run, and took 4.2 s of a worker's main thread over the reverify bench's
  // ~700 runs here (~650 entries, 6 ms a run).
  if (harness.contained.launch.mode !== 'process-group') {
    releaseRunUser(uid);
    return;
  }
  // After the verdict, not before: scanning the shared directories costs a few ms with a few hundred entries in them.
  // The uid is not handed out again until it is done; a process about to exit waits for it (sandboxCleanupsDone).
  const cleanup = removeRunUserFiles(uid, dirname(harness.dir)).finally(() => {
    releaseRunUser(uid);
    pendingCleanups.delete(cleanup);
  });
  pendingCleanups.add(cleanup);
}

const pendingCleanups = new Set<Promise<void>>();

/** Resolves once every run's after-verdict cleanup has finished: what a process awaits before it exits. */
export async function sandboxCleanupsDone(): Promise<void> {
  while (pendingCleanups.size > 0) await Promise.all(pendingCleanups);
}

function childEnvironment(dir: string, limits: SandboxLimits): NodeJS.ProcessEnv {
  // (FORGE_SANDBOX_RUN, the run's marker, is added by ContainedProcess.)
  const env: NodeJS.ProcessEnv = {
    PATH: '/usr/local/bin:/usr/bin:/bin',
    HOME: dir,
    TMPDIR: dir,
    LANG: 'C.UTF-8',
  };
  for (const name of limits.envPassthrough) {
    if (process.env[name] !== undefined) env[name] = process.env[name];
  }
  return env;
}

/** The stderr patterns of a process that V8 or Node ended because memory ran out. */
const OOM_PATTERN = /JavaScript heap out of memory|Reached heap limit|Allocation failed - process out of memory|FATAL ERROR: .*[Oo]ut of memory/;

/** What ends a harness run besides what ends any supervised process (see {@link Ending}). */
type HarnessEnding =
  /** The harness's genuine result frame. */
  | { kind: 'result'; frame: Record<string, unknown> }
  /** More bytes on the result channel than any genuine report takes. */
  | { kind: 'channel-flood' }
  /** A genuine frame the parent could not act on. */
  | { kind: 'unreadable-report'; message: string };

/**
 * Hands one run to a started harness and supervises it to its verdict. 'lost' (`mayBeLost`: a spare, or a process
 * started from a snapshot): the process ended before it read the run (it never sent its `started` frame), so no tool
 * code ran in it; a plain fresh harness that does the same failed to launch, which is a `crashed` verdict saying what
 * the launcher said.
 */
function superviseRun(
  harness: BootedHarness,
  mayBeLost: boolean,
  request: SandboxRequest,
  modulePath: string,
  moduleReady: Promise<unknown>,
  limits: SandboxLimits,
): Promise<Outcome | 'lost'> {
  return new HarnessRun(harness, mayBeLost, request, limits).run(modulePath, moduleReady);
}

/**
 * One run on one harness. The process's life is a {@link Supervision} (starting → running → settling → done); this
 * class reads the harness's frames into its endings and, once the run is done, turns how it ended into the verdict
 * in one place ({@link HarnessRun.verdict}).
 */
class HarnessRun {
  // The run's frame key: the harness reads it before the tool exists, and only MACs made with it ever come back.
  private readonly key = randomBytes(32);
  private readonly stderrTail: TailBuffer;
  private readonly supervision: Supervision<HarnessEnding>;
  /** The harness sent its `started` frame: it read the run, so whatever happens now is the tool's. */
  private started = false;
  private toolInfo: SandboxDiagnostics['tool'];
  private deadlineSays: string;

  constructor(
    private readonly harness: BootedHarness,
    private readonly mayBeLost: boolean,
    private readonly request: SandboxRequest,
    private readonly limits: SandboxLimits,
  ) {
    this.stderrTail = new TailBuffer(limits.stderrTailBytes);
    this.deadlineSays = `the platform limit of ${limits.maxTimeoutMs} ms`;
    // The clock starts with the run, not with the process: a pooled harness may have waited long before it.
    this.supervision = new Supervision<HarnessEnding>(harness.contained, {
      wallClockMs: limits.maxTimeoutMs,
      outputBytes: limits.outputBytes,
      signal: request.signal,
    });
  }

  async run(modulePath: string, moduleReady: Promise<unknown>): Promise<Outcome | 'lost'> {
    const { contained } = this.harness;
    const channel = contained.channel!;
    // Output is counted (by the supervision) and dropped, stderr keeping a bounded tail: never parsed, so it cannot
    // carry a verdict.
    contained.stderr.on('data', (chunk: Buffer) => this.stderrTail.push(chunk));
    const frames = new FrameChannel(this.key, this.limits.resultBytes + 64 * 1024);
    channel.on('data', (chunk: Buffer) => {
      const parsed = frames.push(chunk);
      if (parsed === 'overflow') return this.supervision.end({ kind: 'channel-flood' });
      for (const frame of parsed) this.onFrame(frame);
    });
    channel.on('error', () => undefined); // EPIPE when the child dies mid-write; the exit path decides
    const init = JSON.stringify({
      modulePath,
      name: this.request.name,
      input: this.request.input,
      resultBytes: this.limits.resultBytes,
      uid: this.harness.uid,
    });
    // starting → running once the module is written and the process is in the run's cgroup: only then may the harness
    // read the run (and so let tool code start).
    const settled = await this.supervision.start(Promise.all([moduleReady, contained.joined]), () =>
      channel.write(Buffer.concat([this.key, Buffer.from(init + '\n', 'utf8')])),
    );
    return this.verdict(settled);
  }

  private onFrame(frame: Record<string, unknown>): void {
    try {
      if (frame.type === 'started') {
        this.started = true;
      } else if (frame.type === 'ready') {
        const toolInfo = {
          description: str(frame.description),
          timeoutMs: num(frame.timeoutMs),
          inputJsonSchema: parseOr(frame.inputJsonSchemaJson, undefined),
        };
        this.toolInfo = toolInfo;
        if (toolInfo.timeoutMs !== undefined && this.supervision.lowerDeadline(performance.now() + toolInfo.timeoutMs)) {
          this.deadlineSays = `the tool's timeoutMs of ${toolInfo.timeoutMs} ms`;
        }
      } else if (frame.type === 'result') {
        this.supervision.end({ kind: 'result', frame });
      }
    } catch (err) {
      // Whatever a frame holds, the parent (a worker serving other runs, or the CLI) must not fall over it.
      this.supervision.end({ kind: 'unreadable-report', message: (err as Error).message });
    }
  }

  /**
   * The verdict, decided here only, once the tree is dead and its pipes drained: from the first ending, then the
   * limits the run passed on the way, counted for good. Output a tool wrote before its result still counts against
   * the output limit; a process of the run the kernel killed for memory still counts against the memory limit.
   */
  private verdict({ ending, overOutputLimit }: Settled<HarnessEnding>): Outcome | 'lost' {
    // A spare that ended before it read the run never ran the tool: the run gets a fresh process instead.
    if (ending.kind === 'exited' && this.mayBeLost && !this.started) return 'lost';
    const outcome = this.outcomeOf(ending);
    const final = outcome.status !== 'output_limit' && overOutputLimit ? this.outputLimit() : this.blamingMemory(outcome);
    const tail = this.stderrTail.text();
    return tail ? { ...final, stderrTail: tail } : final;
  }

  private outcomeOf(ending: Ending<HarnessEnding>): Outcome {
    const { limits, toolInfo } = this;
    switch (ending.kind) {
      case 'result':
        try {
          return resultOutcome(ending.frame, toolInfo);
        } catch (err) {
          return this.unreadable((err as Error).message);
        }
      case 'exited':
        return this.exitOutcome();
      case 'deadline':
        return {
          status: 'timeout',
          error: `no result within ${this.deadlineSays}; the process tree was killed`,
          diagnostics: { phase: 'limits', limit: { kind: 'timeMs', value: ending.limitMs }, tool: toolInfo },
        };
      case 'cancelled':
        return { status: 'timeout', error: 'the run was cancelled; the process tree was killed', diagnostics: { phase: 'limits' } };
      case 'output-limit':
        return this.outputLimit();
      case 'channel-flood':
        return {
          status: 'output_limit',
          error: `the tool flooded the result channel past ${limits.resultBytes} bytes; the process was killed`,
          diagnostics: { phase: 'limits', limit: { kind: 'resultBytes', value: limits.resultBytes } },
        };
      case 'unreadable-report':
        return this.unreadable(ending.message);
      case 'spawn-error':
        return { status: 'crashed', error: `the sandbox process could not start: ${ending.error.message}`, diagnostics: { phase: 'process' } };
      case 'start-failed':
        return { status: 'crashed', error: `the sandbox could not write the module: ${ending.error.message}`, diagnostics: { phase: 'process' } };
    }
  }

  /** The process ended without a result. */
  private exitOutcome(): Outcome {
    const { child, exit, launcherStderr } = this.harness.contained;
    const status = exit ?? { code: child.exitCode, signal: child.signalCode };
    // V8 prints its banner and then aborts: a process that printed the banner itself and exited otherwise is crashed.
    const aborted = status.signal === 'SIGABRT' || status.code === 128 + 6;
    const oom = aborted && OOM_PATTERN.test(this.stderrTail.text());
    return {
      status: oom ? 'oom' : 'crashed',
      error: oom
        ? `the tool passed the ${this.limits.memoryMb} MiB memory limit and was killed`
        : `the process ended before it sent a result (${describeExit(status.code, status.signal)})${launcherNote(launcherStderr)}`,
      diagnostics: {
        phase: oom ? 'limits' : 'process',
        exitCode: status.code,
        signal: status.signal,
        ...(oom ? { limit: { kind: 'memoryMb' as const, value: this.limits.memoryMb } } : {}),
        tool: this.toolInfo,
      },
    };
  }

  private outputLimit(): Outcome {
    const { outputBytes } = this.limits;
    return {
      status: 'output_limit',
      error: `the tool wrote more than ${outputBytes} bytes to stdout and stderr; the rest was dropped and the process killed`,
      diagnostics: { phase: 'limits', limit: { kind: 'outputBytes', value: outputBytes }, tool: this.toolInfo },
    };
  }

  private unreadable(message: string): Outcome {
    return { status: 'crashed', error: `the sandbox could not read the harness's report: ${message}`, diagnostics: { phase: 'process' } };
  }

  /**
   * A run in whose cgroup the kernel killed a process for passing the run's memory limit ran out of memory, whatever
   * the tool made of it: a failure or a crash is how the tool saw a child's death (or the harness's), and a result
   * that passed is one the tool returned without the work of the killed process, for instance when the killed child
   * had already answered (which child the kernel kills, the largest, depends on timing the tool does not control).
   * Like output past its limit, memory past its limit is the verdict; checked once the tree is dead, so a kill
   * between the result and the end of the tree counts too.
   */
  private blamingMemory(outcome: Outcome): Outcome {
    const cgroup = this.harness.contained.cgroup;
    if (outcome.status === 'oom' || !cgroup) return outcome;
    const kills = cgroup.oomKills();
    if (kills === 0) return outcome;
    const limitMb = Math.round(cgroup.limitBytes / 1024 / 1024);
    const then = outcome.status === 'passed' ? 'the tool returned a result all the same, which does not count' : (outcome.error ?? outcome.status);
    return {
      status: 'oom',
      error: `the tool's processes together passed the run's memory limit of ${limitMb} MiB, and the kernel killed ${kills === 1 ? 'one' : `${kills} of them`} (then: ${then})`,
      diagnostics: { ...outcome.diagnostics, phase: 'limits', limit: { kind: 'memoryMb', value: limitMb } } as SandboxDiagnostics,
    };
  }
}

/**
 * The outcome a genuine result frame reports. Checked all the same, since the verdict is what the caller acts on: a
 * status outside TOOL_CONTRACT.md or an output that is not JSON is the harness's failure, never a `passed`.
 */
function resultOutcome(frame: Record<string, unknown>, toolInfo: SandboxDiagnostics['tool']): Outcome {
  const status = frame.status;
  const diagnostics = { ...(isRecord(frame.diagnostics) ? frame.diagnostics : {}), tool: toolInfo } as SandboxDiagnostics;
  if (!(SANDBOX_STATUSES as readonly unknown[]).includes(status)) {
    return {
      status: 'crashed',
      error: `the sandbox harness reported an unknown verdict ${JSON.stringify(status)}`,
      diagnostics: { phase: 'process', tool: toolInfo },
    };
  }
  if (status === 'passed') {
    const output = parseOr(frame.outputJson, NOT_JSON);
    if (output === NOT_JSON) return { status: 'failed', error: 'the result the harness sent is not JSON', diagnostics: { phase: 'serialize', tool: toolInfo } };
    return { status, output, diagnostics };
  }
  const error = typeof frame.error === 'string' ? frame.error : 'the sandbox harness reported no error text';
  return { status: status as SandboxStatus, error: clipText(error, MAX_ERROR_CHARS), diagnostics };
}

const NOT_JSON = Symbol('not JSON');
/** Long enough for any error the harness sends (it clips to 8000 characters), short enough for a Temporal payload. */
const MAX_ERROR_CHARS = 10_000;

function parseOr(text: unknown, fallback: unknown): unknown {
  if (typeof text !== 'string') return fallback;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return fallback;
  }
}

function clipText(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, max)}…` : text;
}

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** What the launcher (unshare, sh) said, when the run never got as far as the tool. */
function launcherNote(tail: TailBuffer): string {
  const lines = launcherSaid(tail);
  return lines.length > 0 ? `; the launcher said: ${lines.slice(-3).join(' | ')}` : '';
}

function describeExit(code: number | null, signal: string | null): string {
  if (signal) return `killed by ${signal}`;
  // Through the namespace's sh, a signal death shows as 128 + the signal's number.
  if (code !== null && code > 128 && code < 160) return `exit code ${code}, i.e. killed by signal ${code - 128}`;
  return `exit code ${code}`;
}

const str = (v: unknown) => (typeof v === 'string' ? v : undefined);
const num = (v: unknown) => (typeof v === 'number' && Number.isFinite(v) ? v : undefined);
