/**
 * One command as a bounded, contained process tree: {@link runContainedProcess}. It is the sandbox's one containment
 * mechanism: tool test runs (run.ts) start their harness as a {@link ContainedProcess} and supervise it with the same
 * {@link Supervision}; promotion stages (`npx tsc --noEmit -p .`, `npx jest ...`, `node dist/main.js --startup-smoke`)
 * run through runContainedProcess.
 *
 * What runContainedProcess guarantees, whatever the outcome (`exited`, `timeout`, `oom`, `killed`, `output-limit`,
 * `spawn-error`):
 * - **No shell.** `argv` is executed as it is: argv[0] is resolved to a file (against `env.PATH`, or against `cwd`
 *   when it has a slash) and the rest are its arguments, never parsed by anything. A missing or non-executable
 *   command, or a missing `cwd`, is `spawn-error` and nothing is started.
 * - **Nothing inherited.** The tree's environment is exactly `env`, plus FORGE_SANDBOX_RUN (the run's marker) and
 *   TMPDIR (the run's private directory) unless `env` sets TMPDIR. stdin is /dev/null; no descriptor of the worker's
 *   but stdout and stderr reaches it.
 * - **The whole tree dies.** The tree runs in a PID namespace of its own (or, where the host refuses namespaces, a
 *   process group whose strays are hunted by marker: see containment.ts for what can escape that fallback). When the
 *   promise resolves, every process of the tree is dead, whatever it did (background children, setsid, double forks,
 *   jest workers), unless the kernel could not kill it (a task frozen or in uninterruptible sleep for 10 s, which is
 *   said on stderr). A worker killed with SIGKILL takes its trees with it: the spawn helper that starts them
 *   (src/process/spawner.ts) dies with the worker, and each tree's launcher with the helper (`setpriv --pdeathsig`).
 * - **Memory for the whole tree.** `memoryBytes` bounds all of the tree's processes together. Where Forge can make a
 *   memory cgroup (root, cgroup v1 or v2), the tree runs in its own, without swap: when the tree passes the limit the
 *   kernel kills one of its processes, and the run ends at once (checked every {@link SAMPLE_MS} ms) as `oom`, even if
 *   the top process would have carried on. The limit is its cgroup's parent's, so a `node` in the tree sizes its heap
 *   as outside (run-cgroup.ts). Fallback without a cgroup: the resident memory of the tree's processes is
 *   summed every {@link SAMPLE_MS} ms and the tree killed as `oom` once it passes the limit; a burst faster than that
 *   can overshoot until the next sample, and memory outside the processes (files written to a tmpfs) is not counted.
 *   `result.containment.memoryBound` says which applied.
 * - **Wall clock.** `wallClockMs` from the start: then the tree is killed, `timeout`.
 * - **Output.** stdout and stderr bytes together beyond `outputBytes` end the run as `output-limit`. Of each stream the
 *   parent keeps the head and the tail (`keepBytes` in all), so a flood costs it that much memory and no more.
 * - **Processes.** `maxProcesses` is RLIMIT_NPROC, which counts every process of the user the tree runs as and binds
 *   no root process: without a user of its own the tree's size is bounded by its memory.
 * - **Cancellation and heartbeats.** Aborting `signal` kills the tree: `killed`. `onHeartbeat` is called every
 *   `heartbeatMs` while the tree runs, so a Temporal activity can heartbeat.
 * - **Nothing left behind.** The cgroup and the private directory are removed before the promise resolves, and it
 *   never rejects: a failure of the machinery itself (ENOSPC, EMFILE) is `spawn-error` with the reason.
 */
import { randomBytes } from 'node:crypto';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import { delimiter, dirname, join, resolve } from 'node:path';
import { constants as osConstants } from 'node:os';
import type { Readable, Writable } from 'node:stream';
import { spawnRelayed, type RelayedChild } from '../process/spawner';
import { CGROUP_JOINED, isExecutableFile, killTree, launchCommand, type ContainmentMode, type Launch } from './containment';
import type { FilesystemView } from './filesystem-view';
import { HeadTailBuffer, type CapturedOutput } from './head-tail-buffer';
import { INTERNET, planNetwork, type NetworkPlan, type NetworkPolicy } from './network';
import { sandboxTempRoot } from './paths';
import { removeRunDir } from './remove-run-dir';
import { createRunCgroup, type RunCgroup } from './run-cgroup';
import { runDirPrefix, sweepOrphanedRunDirs } from './run-dirs';
import { Supervision, type Settled, type SupervisedProcess } from './supervision';
import { TailBuffer } from './tail-buffer';

export type { CapturedOutput } from './head-tail-buffer';

/** Bounds of one contained process tree. */
export interface ContainedProcessLimits {
  /** Wall clock from the start; then the tree is killed (`timeout`). */
  wallClockMs: number;
  /** Memory of all the tree's processes together (see the file's comment for how it is enforced). */
  memoryBytes: number;
  /** stdout + stderr bytes the tree may write; beyond it the tree is killed (`output-limit`). */
  outputBytes: number;
  /** How much of each stream the result keeps, half from its start and half from its end (default 64 KiB). */
  keepBytes?: number;
  /** RLIMIT_NPROC for the tree (see the file's comment); unset leaves it as it is. */
  maxProcesses?: number;
}

export interface ContainedProcessOptions {
  /** The command and its arguments; never interpreted by a shell. */
  argv: string[];
  /** The working directory (must exist). */
  cwd: string;
  /** The tree's whole environment: nothing of Forge's is inherited. PATH here finds argv[0] (default /usr/local/bin:/usr/bin:/bin). */
  env: Record<string, string>;
  limits: ContainedProcessLimits;
  /** Called every `heartbeatMs` while the tree runs (a throw from it is ignored). */
  onHeartbeat?: () => void;
  /** Default 1000. */
  heartbeatMs?: number;
  /** Aborting kills the tree: `killed`. */
  signal?: AbortSignal;
  /** Where the run's private directory is made (default: /dev/shm when writable, else the OS temp dir). */
  tmpDir?: string;
  /** The containment mode (default: the best the machine allows; see containment.ts). */
  containment?: ContainmentMode;
  /** `false`: no memory cgroup, the sampled fallback bounds the tree's memory (default: a cgroup where possible). */
  cgroup?: boolean;
  /** What the tree may reach over the network (default: public destinations only; network.ts). */
  network?: NetworkPolicy;
  /**
   * Directories the tree may write besides its private one (a promotion's worktree and HOME); everything else it sees
   * is read-only, and only what it needs to run is there at all (filesystem-view.ts).
   */
  writable?: string[];
  /** Directories it may read besides the system's and Node's (the packages the command loads). */
  readable?: string[];
}

export type ContainedOutcome = 'exited' | 'timeout' | 'oom' | 'killed' | 'output-limit' | 'spawn-error';

export interface ContainedProcessResult {
  outcome: ContainedOutcome;
  /** One sentence on why, for every outcome but `exited`. */
  error?: string;
  /**
   * How the command ended. Through the PID namespace's init a command killed by a signal exits 128 + its number; that
   * is reported as the signal, with exitCode null (so a command that itself exits with 129–192 reads as signalled).
   */
  exitCode: number | null;
  signal: string | null;
  /** Wall time of the whole call, set-up and clean-up included. */
  durationMs: number;
  stdout: CapturedOutput;
  stderr: CapturedOutput;
  resource: {
    /** The largest sum of the tree's resident memory seen by a sample (null: it ended before the first sample). */
    maxRssBytes: number | null;
    /** User CPU time of the tree: exact from a cgroup v2, else the last sample's sum (the last interval missed). */
    cpuUserMicros: number | null;
    /** The most memory the kernel ever charged to the tree's cgroup (page cache included); null without one. */
    memoryPeakBytes: number | null;
  };
  containment: { mode: ContainmentMode | null; memoryBound: 'cgroup' | 'sampled' | null };
}

/** How often a running tree's memory and CPU are sampled (and its cgroup checked for OOM kills). */
const SAMPLE_MS = 100;
const DEFAULT_KEEP_BYTES = 64 * 1024;
const DEFAULT_PATH = '/usr/local/bin:/usr/bin:/bin';

/** Why a contained process could not be started; its message is the result's `error`. */
class SpawnRefused extends Error {}

/** Runs `argv` as a bounded, contained process tree; see the guarantees at the top of this file. Never rejects. */
export async function runContainedProcess(options: ContainedProcessOptions): Promise<ContainedProcessResult> {
  const started = performance.now();
  const keep = options.limits?.keepBytes ?? DEFAULT_KEEP_BYTES;
  const stdout = new HeadTailBuffer(Math.floor(keep / 2), keep - Math.floor(keep / 2));
  const stderr = new HeadTailBuffer(Math.floor(keep / 2), keep - Math.floor(keep / 2));
  let dir: string | undefined;
  let contained: ContainedProcess | undefined;
  let sampler: TreeSampler | undefined;
  const result = (facts: Omit<ContainedProcessResult, 'durationMs' | 'stdout' | 'stderr' | 'resource' | 'containment'>): ContainedProcessResult => ({
    ...facts,
    durationMs: Math.round(performance.now() - started),
    stdout: stdout.captured(),
    stderr: stderr.captured(),
    resource: {
      maxRssBytes: sampler?.maxRssBytes ?? null,
      cpuUserMicros: contained?.cgroup?.cpuUserMicros() ?? sampler?.cpuUserMicros ?? null,
      memoryPeakBytes: contained?.cgroup?.peakBytes() ?? null,
    },
    containment: { mode: contained?.launch.mode ?? null, memoryBound: contained ? (contained.cgroup ? 'cgroup' : 'sampled') : null },
  });
  try {
    const { argv, cwd, limits } = checkOptions(options);
    if (options.signal?.aborted) return result({ outcome: 'killed', error: 'cancelled before it started', exitCode: null, signal: null });
    const command = resolveCommand(argv[0], cwd, options.env.PATH ?? DEFAULT_PATH);
    const root = sandboxTempRoot(options.tmpDir);
    void sweepOrphanedRunDirs(root); // once per process: what killed workers left here
    dir = await mkdtemp(join(root, runDirPrefix()));
    contained = ContainedProcess.start({
      argv: [command, ...argv.slice(1)],
      cwd,
      env: { ...options.env, TMPDIR: options.env.TMPDIR ?? dir },
      memoryBytes: limits.memoryBytes,
      maxProcesses: limits.maxProcesses,
      containment: options.containment,
      cgroup: options.cgroup,
      view: { writable: [dir, ...(options.writable ?? [])], readable: [dirname(command), ...(options.readable ?? [])], cwd, switchesUser: false },
      network: await planNetwork(options.network ?? INTERNET),
    });
    contained.stdout.on('data', (chunk: Buffer) => stdout.push(chunk));
    contained.stderr.on('data', (chunk: Buffer) => stderr.push(chunk));
    const beat = options.onHeartbeat;
    const supervision = new Supervision<{ kind: 'memory' }>(contained, {
      wallClockMs: limits.wallClockMs,
      outputBytes: limits.outputBytes,
      signal: options.signal,
      heartbeat: beat && {
        everyMs: options.heartbeatMs ?? 1000,
        beat: () => {
          try {
            beat();
          } catch {
            // The caller's trouble, not the tree's: the run goes on.
          }
        },
      },
    });
    sampler = new TreeSampler(contained, limits.memoryBytes, () => supervision.end({ kind: 'memory' }));
    const settled = await supervision.start();
    sampler.stop();
    return result({ ...outcomeOf(settled, contained, limits), ...exitOf(contained) });
  } catch (err) {
    const error = err instanceof SpawnRefused ? err.message : `the contained process could not be started: ${(err as Error).message}`;
    return result({ outcome: 'spawn-error', error, exitCode: null, signal: null });
  } finally {
    sampler?.stop();
    if (contained) {
      await contained.kill().catch(() => undefined); // already dead unless something above threw
      await contained.release();
    }
    if (dir) await removeRunDir(dir);
  }
}

/** The outcome, decided here only, once the tree is dead and its output counted for good. */
function outcomeOf(
  { ending, overOutputLimit, outputBytes }: Settled<{ kind: 'memory' }>,
  contained: ContainedProcess,
  limits: ContainedProcessLimits,
): { outcome: ContainedOutcome; error?: string } {
  if (ending.kind === 'spawn-error' || ending.kind === 'start-failed') {
    return { outcome: 'spawn-error', error: `the contained process could not be started: ${ending.error.message}` };
  }
  const launcher = launcherSaid(contained.launcherStderr);
  if (ending.kind === 'exited' && launcher.length > 0) {
    return { outcome: 'spawn-error', error: `the containment launcher failed: ${launcher.slice(-3).join(' | ')}` };
  }
  if (overOutputLimit) {
    return {
      outcome: 'output-limit',
      error: `the process tree wrote ${outputBytes} bytes to stdout and stderr, over the ${limits.outputBytes}-byte limit; it was killed`,
    };
  }
  const oomKills = contained.cgroup?.oomKills() ?? 0;
  if (ending.kind === 'memory' || oomKills > 0) {
    const limitMb = Math.round(limits.memoryBytes / 1024 / 1024);
    return {
      outcome: 'oom',
      error: contained.cgroup
        ? `the process tree passed its memory limit of ${limitMb} MiB: the kernel killed ${oomKills === 1 ? 'one of its processes' : `${oomKills} of its processes`}, and then the tree`
        : `the process tree's resident memory passed its limit of ${limitMb} MiB; the tree was killed`,
    };
  }
  if (ending.kind === 'deadline') return { outcome: 'timeout', error: `still running after ${limits.wallClockMs} ms; the process tree was killed` };
  if (ending.kind === 'cancelled') return { outcome: 'killed', error: 'cancelled; the process tree was killed' };
  return { outcome: 'exited' }; // (an `output-limit` ending was counted over the limit, so it is handled above)
}

/** The command's exit, as the launcher reported it (see {@link ContainedProcessResult.exitCode}). */
function exitOf(contained: ContainedProcess): { exitCode: number | null; signal: string | null } {
  const { code, signal } = contained.exit ?? { code: contained.child.exitCode, signal: contained.child.signalCode };
  if (contained.launch.mode !== 'process-group' && code !== null && code > 128) {
    const name = Object.entries(osConstants.signals).find(([, n]) => n === code - 128)?.[0];
    if (name) return { exitCode: null, signal: name };
  }
  return { exitCode: code, signal };
}

function checkOptions(options: ContainedProcessOptions): { argv: string[]; cwd: string; limits: ContainedProcessLimits } {
  const { argv, cwd, limits, env } = options;
  if (!Array.isArray(argv) || argv.length === 0 || !argv.every((a) => typeof a === 'string' && !a.includes('\0')) || argv[0] === '') {
    throw new SpawnRefused('argv must be a non-empty array of strings without NUL characters');
  }
  if (typeof env !== 'object' || env === null || !Object.values(env).every((v) => typeof v === 'string' && !v.includes('\0'))) {
    throw new SpawnRefused('env must map names to strings without NUL characters');
  }
  for (const key of ['wallClockMs', 'memoryBytes', 'outputBytes'] as const) {
    if (!(typeof limits?.[key] === 'number' && limits[key] > 0)) throw new SpawnRefused(`limits.${key} must be a positive number`);
  }
  try {
    if (!statSync(cwd).isDirectory()) throw new SpawnRefused(`the working directory ${cwd} is not a directory`);
  } catch (err) {
    if (err instanceof SpawnRefused) throw err;
    throw new SpawnRefused(`the working directory ${cwd} cannot be used: ${(err as Error).message}`);
  }
  return { argv, cwd, limits };
}

/** argv[0] as an absolute path: relative to `cwd` when it has a slash, else the first match on `path`. */
function resolveCommand(command: string, cwd: string, path: string): string {
  if (command.includes('/')) {
    const file = resolve(cwd, command);
    if (isExecutableFile(file)) return file;
    throw new SpawnRefused(`the command ${command} does not exist or is not executable (looked at ${file})`);
  }
  for (const dir of path.split(delimiter)) {
    const file = resolve(cwd, dir || '.', command);
    if (isExecutableFile(file)) return file;
  }
  throw new SpawnRefused(`the command ${command} was not found on PATH (${path})`);
}

/** What the launcher (unshare, setpriv, the namespace's sh) said about its own failures, never the command's output. */
export function launcherSaid(tail: TailBuffer): string[] {
  // unshare reports failing to re-raise a SIGKILL on itself; that is our own kill, not news.
  return tail
    .text()
    .split('\n')
    .filter((l) => /^(unshare|setpriv|bwrap|forge-sandbox):/.test(l) && !l.includes('sigprocmask') && l !== CGROUP_JOINED);
}

/** What {@link ContainedProcess.start} starts. */
export interface ContainedSpawn {
  /** argv[0] an absolute path. */
  argv: string[];
  cwd: string;
  /** The whole environment (FORGE_SANDBOX_RUN is added). */
  env: NodeJS.ProcessEnv;
  /** The tree's memory cgroup limit, where Forge can make one. */
  memoryBytes: number;
  /** RLIMIT_AS of each process (unset: left as it is). */
  addressSpaceBytes?: number;
  maxProcesses?: number;
  /** See {@link launchCommand}; default `before-exec`. */
  joinCgroup?: 'before-exec' | 'while-booting';
  /** Give the command fd 3 as a pipe to the parent ({@link ContainedProcess.channel}). */
  channel?: boolean;
  /** The containment mode (default: the best the machine allows). */
  containment?: ContainmentMode;
  /** `false`: no memory cgroup even where one could be made. */
  cgroup?: boolean;
  /** Namespace modes: what the tree sees of the filesystem (filesystem-view.ts). */
  view?: FilesystemView;
  /** Namespace modes: the tree's network, planned (network.ts). */
  network?: NetworkPlan;
}

/**
 * A started process tree and what holds it: its launch (namespace or process group), its memory cgroup, its marker.
 * {@link kill} ends the whole tree, {@link release} removes the cgroup afterwards. Supervised by a {@link Supervision}.
 */
export class ContainedProcess implements SupervisedProcess {
  /** What the launcher (setpriv, unshare, sh) said on its own stderr since the start. */
  readonly launcherStderr = new TailBuffer(2048);
  /** The command's stdout and stderr (fd 1 and, through the launcher, fd 4). */
  readonly stdout: Readable;
  readonly stderr: Readable;
  /** fd 3, when asked for. */
  readonly channel: (Readable & Writable) | undefined;
  /** Settles once the command is in the tree's cgroup (at once when it joined before exec, or without one). */
  readonly joined: Promise<void>;
  /** Settles once the launcher exited and every pipe drained. */
  readonly closed: Promise<void>;
  /** Set when the launcher exited. */
  exit?: { code: number | null; signal: string | null };
  /** Why the launcher could not be started, if it could not. */
  spawnError?: Error;

  private constructor(
    /** The launcher, started by the spawn helper (src/process/spawner.ts: a fork of this large process costs ~30 ms). */
    readonly child: RelayedChild,
    readonly launch: Launch,
    readonly cgroup: RunCgroup | undefined,
    /** FORGE_SANDBOX_RUN in its environment, for the process-group mode's hunt. */
    readonly marker: string,
  ) {
    this.stdout = child.stdout as Readable;
    this.stderr = child.stdio[4] as Readable;
    this.channel = child.stdio[3] ?? undefined;
    let markJoined: () => void = () => undefined;
    this.joined = cgroup && launch.joinsWhileBooting ? new Promise<void>((r) => (markJoined = r)) : Promise.resolve();
    this.closed = new Promise<void>((r) => child.once('close', () => r()));
    child.stderr?.on('data', (chunk: Buffer) => {
      this.launcherStderr.push(chunk);
      if (this.launcherStderr.text().includes(CGROUP_JOINED)) markJoined();
    });
    child.once('exit', (code, signal) => {
      this.exit = { code, signal };
    });
    // A spawn that failed may never emit 'exit' or 'close': remember it, so a pool never hands it out and a run on it
    // ends at once.
    child.on('error', (err) => {
      this.spawnError ??= err;
      this.exit ??= { code: null, signal: null };
    });
  }

  /** Makes the tree's cgroup and starts the launcher; throws (having removed the cgroup) when either fails. */
  static start(spec: ContainedSpawn): ContainedProcess {
    const cgroup = createRunCgroup(spec.memoryBytes, spec.cgroup ?? true);
    try {
      const marker = randomBytes(12).toString('hex');
      const launch = launchCommand(spec.argv, {
        addressSpaceKb: spec.addressSpaceBytes === undefined ? undefined : Math.floor(spec.addressSpaceBytes / 1024),
        maxProcesses: spec.maxProcesses,
        cgroupPath: cgroup?.path,
        joinCgroup: spec.joinCgroup,
        keepFd3: spec.channel,
        unsetPwd: spec.env.PWD === undefined && spec.joinCgroup !== 'while-booting',
        mode: spec.containment,
        view: spec.view,
        network: spec.network,
      });
      // 0: none; 1: the command's stdout; 2: the launcher's own stderr; 3: the harness channel; 4: the command's stderr.
      // (The launcher closes fd 3 for a command that has no channel.)
      const child = spawnRelayed({
        command: launch.command,
        args: launch.args,
        cwd: spec.cwd,
        env: { ...spec.env, FORGE_SANDBOX_RUN: marker },
        detached: launch.detached,
        channel: spec.channel ?? false,
      });
      return new ContainedProcess(child, launch, cgroup, marker);
    } catch (err) {
      void cgroup?.remove();
      throw err;
    }
  }

  /** Kills every process of the tree; resolves once they are all dead (see killTree for the bound). */
  async kill(): Promise<void> {
    await this.child.spawned; // its pid, or the news that it never started
    return killTree(this.child, this.launch.mode, this.marker);
  }

  /** Removes the tree's cgroup; call once it is dead. */
  async release(): Promise<void> {
    await this.cgroup?.remove();
  }
}

/**
 * Samples a running tree every {@link SAMPLE_MS} ms: its resident memory and user CPU time (from /proc), and whether
 * it passed its memory bound (the cgroup's OOM kills, or without a cgroup the summed resident memory). The first
 * sample comes after one interval, so short runs cost nothing.
 */
class TreeSampler {
  maxRssBytes: number | null = null;
  cpuUserMicros: number | null = null;
  private readonly timer: NodeJS.Timeout;

  constructor(
    private readonly contained: ContainedProcess,
    private readonly memoryBytes: number,
    private readonly onOverMemory: () => void,
  ) {
    this.timer = setInterval(() => this.sample(), SAMPLE_MS);
  }

  stop(): void {
    clearInterval(this.timer);
  }

  private sample(): void {
    const { cgroup, child } = this.contained;
    if (cgroup && cgroup.oomKills() > 0) return this.onOverMemory();
    const pids = cgroup ? cgroup.pids() : child.pid === undefined ? [] : treeOf(child.pid);
    let rss = 0;
    let cpuTicks = 0;
    for (const pid of pids) {
      const usage = processUsage(pid);
      rss += usage.rssBytes;
      cpuTicks += usage.userTicks;
    }
    this.maxRssBytes = Math.max(this.maxRssBytes ?? 0, rss);
    // USER_HZ is 100 on every Linux ABI.
    this.cpuUserMicros = Math.max(this.cpuUserMicros ?? 0, cpuTicks * 10_000);
    if (!cgroup && rss > this.memoryBytes) this.onOverMemory();
  }
}

/** `pid` and every process descending from it (children of any of its threads), read from /proc. */
function treeOf(pid: number): number[] {
  const found: number[] = [];
  const queue = [pid];
  while (queue.length > 0 && found.length < 100_000) {
    const next = queue.shift()!;
    found.push(next);
    let tasks: string[];
    try {
      tasks = readdirSync(`/proc/${next}/task`);
    } catch {
      continue; // gone
    }
    for (const tid of tasks) {
      try {
        for (const child of readFileSync(`/proc/${next}/task/${tid}/children`, 'utf8').split(' ')) if (child.trim()) queue.push(Number(child));
      } catch {
        // The thread ended meanwhile.
      }
    }
  }
  return found;
}

/** A process's resident memory, and its user CPU time with that of the children it has reaped (clock ticks). */
function processUsage(pid: number): { rssBytes: number; userTicks: number } {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'latin1');
    // The command name (field 2) may hold spaces and parentheses: count fields from the last ')'.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const userTicks = Number(fields[11]) + Number(fields[13]); // utime (14) + cutime (16)
    const rssKb = Number(/^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'latin1'))?.[1] ?? 0);
    return { rssBytes: rssKb * 1024, userTicks: Number.isFinite(userTicks) ? userTicks : 0 };
  } catch {
    return { rssBytes: 0, userTicks: 0 }; // gone meanwhile
  }
}
