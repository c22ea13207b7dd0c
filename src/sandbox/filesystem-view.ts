/**
 * The filesystem a run sees (TOOL_CONTRACT.md, "What a tool can reach"): a bubblewrap mount namespace whose root is an
 * empty tmpfs holding, read-only, what a program needs to run (the system's /usr and libraries, a few files of /etc,
 * Node, the packages a tool may import) and, writable, only the run's own directories. FORGE_HOME, agent-tools/, the
 * project, the database's files and other runs' directories are not in it at all: not hidden by permissions, absent.
 * /proc is the run's own PID namespace's, /dev a minimal one, /tmp a tmpfs of its own.
 *
 * bwrap also drops every capability and sets no_new_privs before the run's program starts, so the run cannot change
 * its mounts or its network namespace's routes, and no setuid program gives it any. A harness that must switch to its
 * run's user keeps CAP_SETUID/CAP_SETGID (CAP_DAC_READ_SEARCH, to enter its user's 0700 directory, and CAP_SYS_NICE, to
 * take back the priority it preloaded at) until it does:
 * the switch from root clears them (see harness.cjs, becomeRunUser).
 */
import { lstatSync, readlinkSync, realpathSync } from 'node:fs';
import { dirname, isAbsolute } from 'node:path';

export interface FilesystemView {
  /** Directories the run may write (its private directory first). */
  writable: string[];
  /** Extra directories or files it may read (the packages it imports, the harness). */
  readable: string[];
  /** The working directory (inside one of the above). */
  cwd: string;
  /** Whether the run's first process switches user itself (the harness under root): keeps the capabilities it needs for that. */
  switchesUser: boolean;
  /** The run's namespace has a user-mode network: /etc/resolv.conf names its resolver. */
  resolver?: string;
  /**
   * Forge is not root, so the launcher already runs in a user namespace of its own as its root: bwrap makes one more
   * inside it and runs the command as an ordinary user there, without capabilities over the run's namespaces.
   */
  nestedUser?: boolean;
}

/** The system directories bound read-only when they exist (links such as /bin -> usr/bin are recreated as links). */
const SYSTEM_DIRS = ['/usr', '/bin', '/sbin', '/lib', '/lib32', '/lib64', '/libx32'];
/** What of /etc a program needs: users and groups, name resolution, the dynamic linker, certificates, time zone. */
const ETC_ENTRIES = [
  '/etc/passwd',
  '/etc/group',
  '/etc/hosts',
  '/etc/nsswitch.conf',
  '/etc/host.conf',
  '/etc/gai.conf',
  '/etc/ld.so.cache',
  '/etc/ld.so.conf',
  '/etc/ld.so.conf.d',
  '/etc/ssl',
  '/etc/ca-certificates',
  '/etc/ca-certificates.conf',
  '/etc/pki',
  '/etc/localtime',
  '/etc/timezone',
  '/etc/alternatives',
  '/etc/os-release',
];

/** The fd the launcher feeds /etc/resolv.conf's contents on (see containment.ts). */
export const RESOLV_CONF_FD = 5;

let systemArgs: string[] | undefined;

/** The bwrap arguments of the part of the view every run shares (probed once per process). */
function systemView(): string[] {
  if (systemArgs) return systemArgs;
  const args: string[] = [];
  for (const dir of SYSTEM_DIRS) {
    const st = lstatOrUndefined(dir);
    if (!st) continue;
    if (st.isSymbolicLink()) args.push('--symlink', readlinkSync(dir), dir);
    else if (st.isDirectory()) args.push('--ro-bind', dir, dir);
  }
  args.push('--perms', '0755', '--dir', '/etc');
  for (const entry of ETC_ENTRIES) args.push('--ro-bind-try', entry, entry);
  // Node itself, when it is not under /usr (nvm, a tarball in /opt): its installation's root.
  const node = realpathSync(process.execPath);
  if (!node.startsWith('/usr/')) {
    const prefix = dirname(dirname(node));
    for (const dir of ancestors([prefix])) args.push('--perms', '0755', '--dir', dir);
    args.push('--ro-bind', prefix, prefix);
  }
  systemArgs = args;
  return args;
}

/** The bwrap arguments (before `--`) that give a run exactly {@link FilesystemView}. */
export function viewArgs(view: FilesystemView): string[] {
  const args = [
    '--unshare-pid', // the run sees none of the launcher's processes (slirp4netns among them)
    '--unshare-ipc',
    '--die-with-parent',
    '--new-session',
    ...systemView(),
    '--proc',
    '/proc',
    '--dev',
    '/dev',
    // Its own /tmp and /var/tmp, shared by nobody, writable as on any host (TMPDIR is its directory all the same).
    '--perms',
    '1777',
    '--tmpfs',
    '/tmp',
    '--perms',
    '1777',
    '--tmpfs',
    '/var/tmp',
  ];
  if (view.resolver) args.push('--perms', '0644', '--ro-bind-data', String(RESOLV_CONF_FD), '/etc/resolv.conf');
  const readable = existingBinds(view.readable);
  const writable = existingBinds(view.writable);
  // bwrap makes the directories above a bind 0700 when it runs as root, which a run's own user could not traverse.
  for (const dir of ancestors([...readable, ...writable].map(([, target]) => target))) args.push('--perms', '0755', '--dir', dir);
  for (const [source, target] of readable) args.push('--ro-bind', source, target);
  for (const [source, target] of writable) args.push('--bind', source, target);
  args.push('--chdir', view.cwd);
  if (view.nestedUser) args.push('--unshare-user', '--uid', '1000', '--gid', '1000');
  args.push('--cap-drop', 'ALL');
  // (CAP_SYS_NICE: a spare preloads at nice 19 and takes its priority back before the run.)
  if (view.switchesUser && !view.nestedUser)
    args.push('--cap-add', 'CAP_SETUID', '--cap-add', 'CAP_SETGID', '--cap-add', 'CAP_DAC_READ_SEARCH', '--cap-add', 'CAP_SYS_NICE');
  return args;
}

/**
 * Binds for the absolute paths that exist: each at its real path (what links inside the view lead to), and at the
 * path as given too when that differs (what the run is told), each once.
 */
function existingBinds(paths: string[]): [string, string][] {
  const binds = new Map<string, string>();
  for (const path of paths) {
    if (!isAbsolute(path)) continue;
    let real: string;
    try {
      real = realpathSync(path);
    } catch {
      continue; // Not there: nothing to bind.
    }
    binds.set(real, real);
    // A link itself (a worktree's node_modules) leads to the real bind; a path under linked directories is bound too.
    if (!lstatOrUndefined(path)?.isSymbolicLink()) binds.set(path, real);
  }
  return [...binds].map(([target, source]) => [source, target]);
}

/** The directories above `paths` that the view's own mounts (/, /dev, /proc, /tmp) do not already hold, parents first. */
function ancestors(paths: string[]): string[] {
  const found = new Set<string>();
  for (const path of paths) {
    const chain: string[] = [];
    for (let dir = dirname(path); dir !== '/' && dir !== '.'; dir = dirname(dir)) chain.unshift(dir);
    for (const dir of chain) if (!['/dev', '/proc', '/tmp', '/var/tmp'].includes(dir)) found.add(dir);
  }
  return [...found];
}

function lstatOrUndefined(path: string) {
  try {
    return lstatSync(path);
  } catch {
    return undefined;
  }
}
