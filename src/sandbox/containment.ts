import { spawnSync } from 'node:child_process';
import type { EventEmitter } from 'node:events';
import { accessSync, constants, readFileSync, readdirSync, statSync } from 'node:fs';
import { once } from 'node:events';
import { SANDBOX_CONTAINMENT_MODES, type ContainmentMode } from '../contract/limits';

/**
 * How the sandbox keeps a tool's whole process tree in hand.
 *
 * - `pid-namespace`: the tool runs in a fresh PID namespace (util-linux `unshare --pid --fork`) whose init is a tiny
 *   `sh`. Killing that init makes the kernel SIGKILL every process in the namespace, including descendants that called
 *   setsid() or double-forked away from the process group, and its parent (`unshare`) is only reaped after they all
 *   are. So "the child exited" implies "the whole tree is gone": no race, no /proc scan. Needs root or unprivileged
 *   user namespaces (`--user --map-root-user`), which most Linux distributions allow.
 * - `process-group`: the fallback where namespaces are refused. The tool gets its own process group, killed as a
 *   group, and every process still carrying the run's marker in its environment is hunted down through /proc. A
 *   descendant that both calls setsid() and scrubs its environment can escape this mode; the startup log says which
 *   mode is in force.
 *
 * In both modes `setpriv --pdeathsig KILL` ties the tree to the process that spawned its launcher, the worker's spawn
 * helper (src/platform/spawner.ts), which has the same tie to the worker: a worker killed with SIGKILL takes its
 * sandboxes with it instead of leaving them orphaned.
 */
export type { ContainmentMode } from '../contract/limits';

export interface Launch {
  command: string;
  args: string[];
  /** Spawn in a new session/process group (the process-group mode needs it for group kills). */
  detached: boolean;
  mode: ContainmentMode;
}

/** The containment runs get: its mode, and what the host adds to it. */
export interface Containment {
  mode: ContainmentMode;
  /** `setpriv --pdeathsig KILL` ties the tree to the process that spawned its launcher (the worker's spawn helper). */
  setpriv: boolean;
  /**
   * The namespace also gets a mount namespace with its own /proc, so the tool sees its own processes only, not the
   * host's (their command lines, and who runs them), and an IPC namespace, so shared memory segments and message
   * queues it makes go with it.
   */
  privateProc: boolean;
}

let setprivWorks: boolean | undefined;
let bestMode: ContainmentMode | undefined;
const privateProcByMode = new Map<ContainmentMode, boolean>();

/**
 * The containment of runs on this machine: `forced` when given (the operator's choice, e.g. `process-group` where
 * namespaces are known to be refused), else the best mode the machine allows. Each probe runs once per process.
 */
export function containment(forced?: ContainmentMode): Containment {
  if (forced !== undefined && !SANDBOX_CONTAINMENT_MODES.includes(forced)) {
    throw new Error(`unknown sandbox containment mode ${JSON.stringify(forced)} (use ${SANDBOX_CONTAINMENT_MODES.join(', ')})`);
  }
  setprivWorks ??= probe('setpriv', ['--pdeathsig', 'KILL', '--', 'true']);
  const mode = forced ?? (bestMode ??= probeBestMode());
  let privateProc = privateProcByMode.get(mode);
  if (privateProc === undefined) {
    privateProc = mode !== 'process-group' && probe('unshare', [...userNamespace(mode), '--pid', '--fork', '--kill-child', '--mount', '--mount-proc', '--ipc', 'true']);
    privateProcByMode.set(mode, privateProc);
  }
  return { mode, setpriv: setprivWorks, privateProc };
}

function probeBestMode(): ContainmentMode {
  if (probe('unshare', ['--pid', '--fork', '--kill-child', 'true'])) return 'pid-namespace';
  if (probe('unshare', ['--user', '--map-root-user', '--pid', '--fork', '--kill-child', 'true'])) return 'user-pid-namespace';
  return 'process-group';
}

/** Whether a launcher program runs here with these arguments (with an empty environment: nothing of Forge's). */
function probe(name: string, args: string[]): boolean {
  return spawnSync(launcherBinary(name), args, { stdio: 'ignore', timeout: 5000, env: {} }).status === 0;
}

function userNamespace(mode: ContainmentMode): string[] {
  return mode === 'user-pid-namespace' ? ['--user', '--map-root-user'] : [];
}

/** How a command is started inside a launch (see {@link launchCommand}). */
export interface LaunchOptions {
  /** RLIMIT_AS of every process, in KiB (undefined: left as it is). */
  addressSpaceKb?: number;
  /** RLIMIT_NPROC (binds only a run with a user of its own; undefined: left as it is). */
  maxProcesses?: number;
  /** The run's cgroup directory, if it has one. */
  cgroupPath?: string;
  /**
   * When the command enters the cgroup. `before-exec` (the default): nothing of it runs outside. `while-booting`: the
   * launcher moves it in while it starts (joining waits for an RCU grace period, ~13 ms here) and says so with
   * {@link CGROUP_JOINED} on its stderr; only for a command that runs nothing of its own until told to (the harness).
   */
  joinCgroup?: 'before-exec' | 'while-booting';
  /** Leave fd 3 (the harness channel) open in the command; otherwise it is closed before exec. */
  keepFd3?: boolean;
  /** Drop the PWD that the launcher's sh exports, so that the command's environment is exactly what it was given. */
  unsetPwd?: boolean;
  /** The containment mode to use (default: the best the machine allows, see {@link containment}). */
  mode?: ContainmentMode;
}

/**
 * The command that starts `argv` contained (argv[0] an absolute path), with the command's stderr on the launcher's
 * fd 4 (so that what `unshare` or `sh` say on their own stderr never mixes with the command's), with RLIMIT_AS and
 * RLIMIT_NPROC set as `options` say, inside the cgroup `options.cgroupPath` when given. The address-space limit is
 * what makes off-heap allocations (Buffers, typed arrays, native code) fail instead of taking the machine where there
 * is no cgroup; the harness bounds V8's own heap separately with --max-old-space-size.
 */
export function launchCommand(argv: string[], options: LaunchOptions = {}): Launch {
  const { mode, setpriv, privateProc } = containment(options.mode);
  const prefix = setpriv ? [launcherBinary('setpriv'), '--pdeathsig', 'KILL', '--'] : [];
  // RLIMIT_NPROC is `ulimit -u` in bash and `ulimit -p` in dash.
  // An empty limit is left as it is (not raised to unlimited, which a hard limit could refuse).
  const limits = '{ [ -z "$1" ] || ulimit -v "$1"; } && { [ -z "$2" ] || ulimit -u "$2" 2>/dev/null || ulimit -p "$2"; } || exit 125; cg=$3; shift 3;';
  const limitArgs = [options.addressSpaceKb === undefined ? '' : String(options.addressSpaceKb), options.maxProcesses === undefined ? '' : String(options.maxProcesses), options.cgroupPath ?? ''];
  const redirect = options.keepFd3 ? '2>&4 4>&-' : '2>&4 4>&- 3>&-';
  const exec = `${options.unsetPwd ? 'unset PWD; ' : ''}exec "$@" ${redirect}`;
  // `echo 0`: the writing process itself (the subshell about to exec the command) moves into the cgroup.
  const joinSelf = `{ [ -z "$cg" ] || echo 0 > "$cg/cgroup.procs"; } || exit 125;`;
  if (mode === 'process-group') {
    // (This mode is the fallback without namespaces, where Forge is seldom root: joining before exec is fine here.)
    const joined = options.joinCgroup === 'while-booting' ? `{ [ -z "$cg" ] || { echo 0 > "$cg/cgroup.procs" && echo '${CGROUP_JOINED}' >&2; }; } || exit 125;` : joinSelf;
    const script = `${limits} ${joined} ${exec}`;
    const argvAll = [...prefix, '/bin/sh', '-c', script, 'forge-sandbox', ...limitArgs, ...argv];
    return { command: argvAll[0], args: argvAll.slice(1), detached: true, mode };
  }
  // sh is the namespace's init (pid 1): it cannot be killed by the command from inside, so the command's own SIGKILL
  // of itself still ends it; when the command ends, sh exits with its status and the kernel clears the namespace.
  const script =
    options.joinCgroup === 'while-booting'
      ? `${limits} "$@" ${redirect} & node=$!; ` +
        `[ -z "$cg" ] || { echo "$node" > "$cg/cgroup.procs" && echo '${CGROUP_JOINED}' >&2; } || { kill -9 "$node"; exit 125; }; ` +
        'wait "$node"'
      : `${limits} ( ${joinSelf} ${exec} ) & node=$!; wait "$node"`;
  const argvAll = [
    ...prefix,
    launcherBinary('unshare'),
    ...userNamespace(mode),
    '--pid',
    '--fork',
    '--kill-child',
    // Its own /proc, and its own System V IPC and POSIX message queues, which die with the namespace.
    ...(privateProc ? ['--mount', '--mount-proc', '--ipc'] : []),
    '--',
    '/bin/sh',
    '-c',
    script,
    'forge-sandbox',
    ...limitArgs,
    ...argv,
  ];
  return { command: argvAll[0], args: argvAll.slice(1), detached: true, mode };
}

/** Where the launcher's own programs are looked for: fixed, so that neither Forge's PATH nor the run's matters. */
const SYSTEM_DIRS = ['/usr/local/sbin', '/usr/local/bin', '/usr/sbin', '/usr/bin', '/sbin', '/bin'];
const launcherPaths = new Map<string, string>();

/** The absolute path of a launcher program (setpriv, unshare), or its bare name when none of the system dirs has it. */
function launcherBinary(name: string): string {
  let path = launcherPaths.get(name);
  if (path === undefined) {
    path = SYSTEM_DIRS.map((dir) => `${dir}/${name}`).find((p) => isExecutableFile(p)) ?? name;
    launcherPaths.set(name, path);
  }
  return path;
}

/** Whether `path` is a regular file this process may execute. */
export function isExecutableFile(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return statSync(path).isFile();
  } catch {
    return false;
  }
}

/** What the launcher says on its stderr once the tool's process is in the run's cgroup. */
export const CGROUP_JOINED = 'forge-sandbox: joined the run cgroup';

/**
 * Kills everything the launch started and resolves once it is all dead. `marker` is the value of the
 * FORGE_SANDBOX_RUN variable the run's processes carry (used by the process-group mode only).
 */
export async function killTree(child: LaunchedProcess, mode: ContainmentMode, marker: string): Promise<void> {
  const pid = child.pid;
  if (pid === undefined) return;
  const exited = boundedExit(child, pid);
  if (mode === 'process-group') {
    signal(-pid);
    await exited;
    // Descendants that left the group (setsid, detached spawns) but still carry the marker.
    for (let round = 0; round < 50; round++) {
      const strays = processesWithMarker(marker);
      if (strays.length === 0) return;
      strays.forEach((p) => signal(p));
      await new Promise((r) => setTimeout(r, 10));
    }
    return;
  }
  // The launcher has exited: unshare is reaped only after the kernel cleared its namespace, so nothing is left, and its
  // pid may already belong to another process.
  if (child.exitCode !== null || child.signalCode !== null) return;
  // Kill the namespace's init, not `unshare`: unshare reaps it only after the kernel has killed the namespace, so its
  // exit is our proof that nothing is left. If init does not exist (yet, or any more), killing unshare is enough:
  // --kill-child takes init down with it, and without init there is no namespace to clear.
  const init = childrenOf(pid)[0];
  if (init !== undefined) signal(init);
  else signal(pid);
  await exited;
  if (init !== undefined) await waitGone(init);
  // The launcher's own group (setpriv/unshare) last, in case the namespace was never created.
  signal(-pid);
}

/**
 * The launcher as its parent sees it: a ChildProcess, or a RelayedChild started by the spawn helper. A pid is reused
 * only after the kernel has handed out every other (pid_max, cyclically), so signalling the launcher's pid (or group)
 * while its exit is still on its way from the helper cannot reach another process.
 */
export interface LaunchedProcess extends EventEmitter {
  pid?: number;
  exitCode: number | null;
  signalCode: NodeJS.Signals | null;
}

/** How long a SIGKILLed tree may take to die before the caller gets on with its verdict. */
const KILL_WAIT_MS = 10_000;

/**
 * Resolves when the launcher exits, or after {@link KILL_WAIT_MS}: SIGKILL cannot end a task the cgroup freezer holds
 * (or one stuck in uninterruptible sleep), and a caller waiting for it forever would never return a verdict. That case
 * is said on stderr, since the tree then outlives the verdict.
 */
function boundedExit(child: LaunchedProcess, pid: number): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise<void>((resolve) => {
    const timer = setTimeout(() => {
      process.stderr.write(`forge sandbox: process ${pid} did not die within ${KILL_WAIT_MS} ms of SIGKILL (frozen or uninterruptible); not waiting longer\n`);
      resolve();
    }, KILL_WAIT_MS);
    void once(child, 'exit').then(() => {
      clearTimeout(timer);
      resolve();
    });
  });
}

function signal(pid: number): void {
  try {
    process.kill(pid, 'SIGKILL');
  } catch {
    // ESRCH: already gone, which is what we want.
  }
}

function childrenOf(pid: number): number[] {
  try {
    return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8')
      .trim()
      .split(/\s+/)
      .filter(Boolean)
      .map(Number);
  } catch {
    return [];
  }
}

/** Waits until a process id is no longer a live process (gone, or a zombie its parent has not reaped yet). */
async function waitGone(pid: number): Promise<void> {
  for (let i = 0; i < 500; i++) {
    let state: string;
    try {
      state = readFileSync(`/proc/${pid}/stat`, 'utf8');
    } catch {
      return;
    }
    if (/\) [ZX] /.test(state)) return;
    await new Promise((r) => setTimeout(r, 2));
  }
}

/** Process ids whose environment holds FORGE_SANDBOX_RUN=<marker>. */
export function processesWithMarker(marker: string): number[] {
  const needle = `FORGE_SANDBOX_RUN=${marker}\0`;
  const found: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (readFileSync(`/proc/${entry}/environ`, 'latin1').includes(needle)) found.push(Number(entry));
    } catch {
      // Gone meanwhile, or not ours to read.
    }
  }
  return found;
}
