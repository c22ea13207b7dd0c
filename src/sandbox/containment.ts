import { spawnSync } from 'node:child_process';
import type { EventEmitter } from 'node:events';
import { accessSync, constants, readFileSync, readdirSync, statSync } from 'node:fs';
import { once } from 'node:events';
import { SANDBOX_CONTAINMENT_MODES, type ContainmentMode } from '../contract/limits';
import { RESOLV_CONF_FD, viewArgs, type FilesystemView } from './filesystem-view';
import { SLIRP, type NetworkPlan } from './network';

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
 * helper (src/process/spawner.ts), which has the same tie to the worker: a worker killed with SIGKILL takes its
 * sandboxes with it instead of leaving them orphaned.
 */
export type { ContainmentMode } from '../contract/limits';

export interface Launch {
  command: string;
  args: string[];
  /** Spawn in a new session/process group (the process-group mode needs it for group kills). */
  detached: boolean;
  mode: ContainmentMode;
  /** The launcher says {@link CGROUP_JOINED} once the command is in its cgroup (else it joined before exec). */
  joinsWhileBooting: boolean;
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
  /**
   * Namespace modes: the run's read-only filesystem view (bubblewrap, filesystem-view.ts) and network namespace
   * (network.ts). Unset where the mode has none (`process-group`, chosen on purpose by the operator).
   */
  hermetic?: { bwrap: string; slirp4netns?: string; nft?: string };
  /**
   * Why runs cannot start on this host as configured (no namespaces and no `process-group` chosen on purpose; bwrap
   * missing): every run is refused with it, and the start-up log says it.
   */
  refused?: string;
  /** Why runs get no user-mode network on this host (slirp4netns missing, /dev/net/tun closed): `internet` and allowlists are refused with it. */
  noUserNetwork?: string;
}

let setprivWorks: boolean | undefined;
let bestMode: ContainmentMode | undefined;
const byMode = new Map<ContainmentMode, Containment>();

/**
 * The containment of runs on this machine: `forced` when given (the operator's choice, e.g. `process-group` where
 * namespaces are known to be refused), else the best mode the machine allows. Each probe runs once per process. Where
 * the machine allows no namespace, or lacks bubblewrap, and the operator did not choose `process-group`, `refused`
 * says so: Forge runs no tool there rather than run it with the platform in reach.
 */
export function containment(forced?: ContainmentMode): Containment {
  if (forced !== undefined && !SANDBOX_CONTAINMENT_MODES.includes(forced)) {
    throw new Error(`unknown sandbox containment mode ${JSON.stringify(forced)} (use ${SANDBOX_CONTAINMENT_MODES.join(', ')})`);
  }
  setprivWorks ??= probe('setpriv', ['--pdeathsig', 'KILL', '--', 'true']);
  const mode = forced ?? (bestMode ??= probeBestMode());
  let found = byMode.get(mode);
  if (found) return found;
  if (mode === 'process-group') {
    found = {
      mode,
      setpriv: setprivWorks,
      privateProc: false,
      refused:
        forced === undefined
          ? 'this host allows no PID or user namespace, so a tool would run with the platform and its files in reach: Forge runs no tool here unless FORGE_SANDBOX_CONTAINMENT=process-group is set on purpose'
          : undefined,
    };
  } else {
    const privateProc = probe('unshare', [...userNamespace(mode), '--pid', '--fork', '--kill-child', '--mount', '--mount-proc', '--ipc', 'true']);
    const bwrap = launcherBinary('bwrap');
    const nested = mode === 'user-pid-namespace' ? ['--unshare-user', '--uid', '1000', '--gid', '1000'] : [];
    const bwrapWorks = probe('unshare', [
      ...userNamespace(mode),
      '--pid',
      '--fork',
      '--kill-child',
      '--mount',
      '--mount-proc',
      '--net',
      '--',
      bwrap,
      '--ro-bind',
      '/',
      '/',
      '--unshare-pid',
      ...nested,
      '--cap-drop',
      'ALL',
      '--',
      '/bin/sh',
      '-c',
      'true',
    ]);
    const slirp = launcherBinary('slirp4netns');
    const nft = launcherBinary('nft');
    found = {
      mode,
      setpriv: setprivWorks,
      privateProc,
      hermetic:
        bwrapWorks && privateProc
          ? { bwrap, slirp4netns: isExecutableFile(slirp) ? slirp : undefined, nft: isExecutableFile(nft) ? nft : undefined }
          : undefined,
      refused:
        bwrapWorks && privateProc
          ? undefined
          : `bubblewrap (bwrap) does not run here${isExecutableFile(bwrap) ? '' : ': it is not installed (Debian: apt-get install bubblewrap)'}, so a tool would see the host's files: Forge runs no tool here unless FORGE_SANDBOX_CONTAINMENT=process-group is set on purpose`,
      noUserNetwork: !isExecutableFile(slirp)
        ? 'slirp4netns is not installed (Debian: apt-get install slirp4netns)'
        : process.getuid?.() !== 0 && !canOpenTun()
          ? "/dev/net/tun is not open to Forge's user (Debian makes it 0666)"
          : undefined,
    };
  }
  byMode.set(mode, found);
  return found;
}

function canOpenTun(): boolean {
  try {
    accessSync('/dev/net/tun', constants.R_OK | constants.W_OK);
    return true;
  } catch {
    return false;
  }
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
   * The namespace modes always join before exec: the launcher's helpers (bwrap, slirp4netns) belong to the run too.
   */
  joinCgroup?: 'before-exec' | 'while-booting';
  /** Leave fd 3 (the harness channel) open in the command; otherwise it is closed before exec. */
  keepFd3?: boolean;
  /** Drop the PWD that the launcher's sh exports, so that the command's environment is exactly what it was given. */
  unsetPwd?: boolean;
  /** The containment mode to use (default: the best the machine allows, see {@link containment}). */
  mode?: ContainmentMode;
  /** Namespace modes: the filesystem the command sees (required there). */
  view?: FilesystemView;
  /** Namespace modes: the run's network (default: loopback only). */
  network?: NetworkPlan;
}

/** The run's tap device until it is ready for slirp4netns (see {@link networkScript}). */
const TAP_UNREADY = 'forge-tap-new';

/** The launcher script of the namespace modes' network namespace (see {@link launchCommand}). */
const networkScript = (ip: string, nft: string) =>
  [
    'net=$1; routes=$2; nft=$3; shift 3;',
    `"${ip}" link set lo up || { echo 'forge-sandbox: could not bring the run network loopback up' >&2; exit 125; };`,
    'if [ "$net" = slirp ]; then',
    // The tap device is made here, persistent, before slirp4netns opens it: a tap that slirp4netns made itself is
    // unregistered when it exits, and that waits out RCU grace periods (15–20 ms here) on the way to the run's verdict;
    // a persistent one goes with the network namespace, after the run, off the verdict's path. It is made under another
    // name and renamed once `ip` has let go of it, since init starts slirp4netns as soon as the name appears and a tap
    // held open refuses a second opener (EBUSY).
    `  said=$(printf 'tuntap add dev ${TAP_UNREADY} mode tap\nlink set dev ${TAP_UNREADY} name ${SLIRP.device}\n%s' "$routes" | "${ip}" -batch - 2>&1) || { echo "forge-sandbox: could not set the run network up: "$said >&2; exit 125; };`,
    `  [ -z "$nft" ] || said=$(printf '%s' "$nft" | "${nft}" -f - 2>&1) || { echo "forge-sandbox: could not load the network allowlist (nft): "$said >&2; exit 125; };`,
    `  up() { while read -r i d r; do [ "$i" = ${SLIRP.device} ] && [ "$d" = 00000000 ] && return 0; done < /proc/net/route; return 1; };`,
    `  n=0; until up; do n=$((n+1)); [ $n -gt 5000 ] && { echo 'forge-sandbox: the run network did not come up (slirp4netns)' >&2; exit 125; }; sleep 0.001; done;`,
    'fi;',
  ].join(' ');

/**
 * The command that starts `argv` contained (argv[0] an absolute path), with the command's stderr on the launcher's
 * fd 4 (so that what `unshare` or `sh` say on their own stderr never mixes with the command's), with RLIMIT_AS and
 * RLIMIT_NPROC set as `options` say, inside the cgroup `options.cgroupPath` when given. The address-space limit is
 * what makes off-heap allocations (Buffers, typed arrays, native code) fail instead of taking the machine where there
 * is no cgroup; the harness bounds V8's own heap separately with --max-old-space-size.
 *
 * In the namespace modes the tree is: `unshare` (PID, mount, IPC namespaces, and a user namespace where Forge is not
 * root) → `sh`, the namespace's init, still in the host's network namespace → `unshare --net` → `sh`, which sets up
 * the run's routes (network.ts) and waits for its network → `bwrap` (filesystem-view.ts) → the command. Beside it, for
 * a user-mode network, init starts `slirp4netns` on the run's network namespace: inside the run's PID namespace, so it
 * dies with the run, yet invisible to the command, which bwrap puts in a PID namespace of its own.
 */
export function launchCommand(argv: string[], options: LaunchOptions = {}): Launch {
  const found = containment(options.mode);
  const { mode, setpriv, privateProc } = found;
  if (found.refused) throw new Error(found.refused);
  const prefix = setpriv ? [launcherBinary('setpriv'), '--pdeathsig', 'KILL', '--'] : [];
  // RLIMIT_NPROC is `ulimit -u` in bash and `ulimit -p` in dash.
  // An empty limit is left as it is (not raised to unlimited, which a hard limit could refuse).
  const limits = '{ [ -z "$1" ] || ulimit -v "$1"; } && { [ -z "$2" ] || ulimit -u "$2" 2>/dev/null || ulimit -p "$2"; } || exit 125; cg=$3; shift 3;';
  const limitArgs = [
    options.addressSpaceKb === undefined ? '' : String(options.addressSpaceKb),
    options.maxProcesses === undefined ? '' : String(options.maxProcesses),
    options.cgroupPath ?? '',
  ];
  const redirect = options.keepFd3 ? '2>&4 4>&-' : '2>&4 4>&- 3>&-';
  const exec = `${options.unsetPwd ? 'unset PWD; ' : ''}exec "$@" ${redirect}`;
  // `echo 0`: the writing process itself (the subshell about to exec the command) moves into the cgroup.
  const joinSelf = `{ [ -z "$cg" ] || echo 0 > "$cg/cgroup.procs"; } || exit 125;`;
  if (mode === 'process-group') {
    // (This mode is the fallback without namespaces, where Forge is seldom root: joining before exec is fine here.)
    const joined =
      options.joinCgroup === 'while-booting' ? `{ [ -z "$cg" ] || { echo 0 > "$cg/cgroup.procs" && echo '${CGROUP_JOINED}' >&2; }; } || exit 125;` : joinSelf;
    const script = `${limits} ${joined} ${exec}`;
    const argvAll = [...prefix, '/bin/sh', '-c', script, 'forge-sandbox', ...limitArgs, ...argv];
    return { command: argvAll[0], args: argvAll.slice(1), detached: true, mode, joinsWhileBooting: options.joinCgroup === 'while-booting' };
  }
  const hermetic = found.hermetic!;
  if (!options.view) throw new Error('a namespace launch needs the filesystem view of its run');
  const network = options.network ?? { kind: 'none', routes: '', nft: '' };
  if (network.kind === 'slirp' && !hermetic.slirp4netns)
    throw new Error(`the run's network cannot be set up: ${found.noUserNetwork ?? 'slirp4netns is missing'}; or set FORGE_SANDBOX_NETWORK=none`);
  if (network.nft !== '' && !hermetic.nft) throw new Error('a network allowlist needs nftables (Debian: apt-get install nftables), which is not installed');
  const view = { ...options.view, resolver: network.kind === 'slirp' ? SLIRP.dns : undefined, nestedUser: mode === 'user-pid-namespace' };
  const resolvConf = view.resolver ? ` ${RESOLV_CONF_FD}<<'EOF'\nnameserver ${view.resolver}\nEOF\n` : '';
  const inner = `${networkScript(launcherBinary('ip'), hermetic.nft ?? 'nft')} ${exec}${resolvConf}`;
  // Init waits until `unshare --net` has made the new network namespace and the run's tap device in it before
  // slirp4netns joins it (joining the host's own would be far worse than no network), then waits for the run. `tap`
  // says 2 once the run's network script is gone (it failed, and says why): slirp4netns then has nothing to join.
  const slirp =
    network.kind === 'slirp'
      ? `tap() { [ -r /proc/$inner/net/dev ] || return 2; while read -r i _; do [ "$i" = ${SLIRP.device}: ] && return 0; done < /proc/$inner/net/dev; return 1; }; ` +
        `n=0; while :; do if ! [ /proc/$inner/ns/net -ef /proc/$$/ns/net ]; then tap; [ $? = 1 ] || break; fi; n=$((n+1)); [ $n -gt 5000 ] && break; sleep 0.001; done; ` +
        `"${hermetic.slirp4netns}" --configure --mtu=65520 --disable-host-loopback --enable-sandbox --enable-seccomp "$inner" ${SLIRP.device} </dev/null >/dev/null 2>&1 3>&- 4>&- & `
      : '';
  const script =
    `${limits} ${joinSelf} script=$1; net=$2; routes=$3; nft=$4; shift 4; ` +
    `"${launcherBinary('unshare')}" --net -- /bin/sh -c "$script" forge-sandbox "$net" "$routes" "$nft" "$@" & inner=$!; ` +
    `${slirp}wait "$inner"`;
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
    inner,
    network.kind,
    network.routes,
    network.nft,
    hermetic.bwrap,
    ...viewArgs(view),
    '--',
    // bwrap always exports PWD for the directory it enters; `env -u` takes it out again where the command's
    // environment must be exactly what it was given.
    ...(options.unsetPwd ? ['/usr/bin/env', '-u', 'PWD', '--'] : []),
    ...argv,
  ];
  return { command: argvAll[0], args: argvAll.slice(1), detached: true, mode, joinsWhileBooting: false };
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
    return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
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
function processesWithMarker(marker: string): number[] {
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
