import { spawnSync, type ChildProcess } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';
import { once } from 'node:events';

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
 * In both modes `setpriv --pdeathsig KILL` ties the tree to the worker that started it: a worker killed with SIGKILL
 * takes its sandboxes with it instead of leaving them orphaned.
 */
export type ContainmentMode = 'pid-namespace' | 'user-pid-namespace' | 'process-group';

export interface Launch {
  command: string;
  args: string[];
  /** Spawn in a new session/process group (the process-group mode needs it for group kills). */
  detached: boolean;
  mode: ContainmentMode;
}

let probed: { mode: ContainmentMode; setpriv: boolean; privateProc: boolean } | undefined;

/**
 * Finds out once per process which containment this machine allows (FORGE_SANDBOX_CONTAINMENT forces one).
 * `privateProc`: the namespace also gets a mount namespace with its own /proc, so the tool sees its own processes
 * only, not the host's (their command lines, and who runs them), and an IPC namespace, so shared memory segments and
 * message queues it makes go with it.
 */
export function containment(): { mode: ContainmentMode; setpriv: boolean; privateProc: boolean } {
  if (probed) return probed;
  const ok = (cmd: string, args: string[]) => spawnSync(cmd, args, { stdio: 'ignore', timeout: 5000 }).status === 0;
  const setpriv = ok('setpriv', ['--pdeathsig', 'KILL', '--', 'true']);
  const forced = process.env.FORGE_SANDBOX_CONTAINMENT as ContainmentMode | undefined;
  let mode: ContainmentMode;
  if (forced === 'pid-namespace' || forced === 'user-pid-namespace' || forced === 'process-group') mode = forced;
  else if (ok('unshare', ['--pid', '--fork', '--kill-child', 'true'])) mode = 'pid-namespace';
  else if (ok('unshare', ['--user', '--map-root-user', '--pid', '--fork', '--kill-child', 'true'])) mode = 'user-pid-namespace';
  else mode = 'process-group';
  const userNs = mode === 'user-pid-namespace' ? ['--user', '--map-root-user'] : [];
  const privateProc = mode !== 'process-group' && ok('unshare', [...userNs, '--pid', '--fork', '--kill-child', '--mount', '--mount-proc', '--ipc', 'true']);
  probed = { mode, setpriv, privateProc };
  return probed;
}

/**
 * The command that starts `node <nodeArgs>` contained, with the tool's stderr on the launcher's fd 4 (so that what
 * `unshare` or `sh` say on their own stderr never mixes with the tool's), with RLIMIT_AS set to `addressSpaceKb` and
 * RLIMIT_NPROC to `maxProcesses` (which binds only a run with a user of its own), inside the cgroup `cgroupPath` when
 * given. The address-space
 * limit is what makes off-heap allocations (Buffers, typed arrays, native code) fail instead of taking the machine;
 * V8's own heap is bounded separately with --max-old-space-size by the caller.
 */
export function launchCommand(nodeArgs: string[], addressSpaceKb: number, maxProcesses: number, cgroupPath = ''): Launch {
  const { mode, setpriv, privateProc } = containment();
  const prefix = setpriv ? ['setpriv', '--pdeathsig', 'KILL', '--'] : [];
  // RLIMIT_NPROC is `ulimit -u` in bash and `ulimit -p` in dash.
  const limits = 'ulimit -v "$1" && { ulimit -u "$2" 2>/dev/null || ulimit -p "$2"; } || exit 125; cg=$3; shift 3;';
  const limitArgs = [String(addressSpaceKb), String(maxProcesses), cgroupPath];
  if (mode === 'process-group') {
    // (This mode is the fallback without namespaces, where Forge is seldom root: joining before exec is fine here.)
    const script = `${limits} { [ -z "$cg" ] || { echo 0 > "$cg/cgroup.procs" && echo '${CGROUP_JOINED}' >&2; }; } || exit 125; exec "$@" 2>&4 4>&-`;
    const argv = [...prefix, '/bin/sh', '-c', script, 'forge-sandbox', ...limitArgs, process.execPath, ...nodeArgs];
    return { command: argv[0], args: argv.slice(1), detached: true, mode };
  }
  // sh is the namespace's init (pid 1): it cannot be killed by the tool from inside, so the tool's own SIGKILL of
  // itself still ends the tool; when node ends, sh exits with its status and the kernel clears the namespace.
  // Joining a cgroup waits for an RCU grace period (~13 ms here), so sh moves node into the run's cgroup while node
  // boots, and says so on its stderr; the parent sends the run (and so lets tool code start) only after that line.
  const script =
    `${limits} "$@" 2>&4 4>&- & node=$!; ` +
    `[ -z "$cg" ] || { echo "$node" > "$cg/cgroup.procs" && echo '${CGROUP_JOINED}' >&2; } || { kill -9 "$node"; exit 125; }; ` +
    'wait "$node"';
  const userNs = mode === 'user-pid-namespace' ? ['--user', '--map-root-user'] : [];
  const argv = [
    ...prefix,
    'unshare',
    ...userNs,
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
    process.execPath,
    ...nodeArgs,
  ];
  return { command: argv[0], args: argv.slice(1), detached: true, mode };
}

/** What the launcher says on its stderr once the tool's process is in the run's cgroup. */
export const CGROUP_JOINED = 'forge-sandbox: joined the run cgroup';

/**
 * Kills everything the launch started and resolves once it is all dead. `marker` is the value of the
 * FORGE_SANDBOX_RUN variable the run's processes carry (used by the process-group mode only).
 */
export async function killTree(child: ChildProcess, mode: ContainmentMode, marker: string): Promise<void> {
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

/** How long a SIGKILLed tree may take to die before the caller gets on with its verdict. */
const KILL_WAIT_MS = 10_000;

/**
 * Resolves when the launcher exits, or after {@link KILL_WAIT_MS}: SIGKILL cannot end a task the cgroup freezer holds
 * (or one stuck in uninterruptible sleep), and a caller waiting for it forever would never return a verdict. That case
 * is said on stderr, since the tree then outlives the verdict.
 */
function boundedExit(child: ChildProcess, pid: number): Promise<void> {
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
