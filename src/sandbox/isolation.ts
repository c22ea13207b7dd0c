import { containment } from './containment';
import { resolveLimits, type SandboxLimits } from './limits';
import { describeNetworkPolicy, INTERNET } from './network';
import { runCgroupSupport } from './run-cgroup';

/**
 * What the operator's start-up log says of how sandbox runs are contained on this host, one line per guarantee
 * (processes, filesystem, network, environment), each saying what holds and, where it does not, why and what to do.
 */
export function describeIsolation(overrides: Partial<SandboxLimits> = {}): string[] {
  const limits = resolveLimits(overrides);
  const found = containment(limits.containment);
  const { mode, setpriv, privateProc } = found;
  const root = process.getuid?.() === 0;
  const user =
    root && limits.userIdBase > 0
      ? `each run as its own user (uids from ${limits.userIdBase})`
      : `runs as Forge's own user (${root ? 'FORGE_SANDBOX_UID_BASE=0' : 'not root'})`;
  const cgroup = runCgroupSupport(limits.cgroup ?? true);
  const memory = cgroup.base ? `a memory cgroup per run (cgroup v${cgroup.base.version})` : `per-process memory limits only (${cgroup.reason ?? 'no cgroup'})`;
  const proc = privateProc ? ', own /proc' : mode === 'process-group' ? '' : ', host /proc (no mount namespace)';
  const lines = [`forge: sandbox processes: ${mode}${proc}${setpriv ? '' : ' (no setpriv: sandboxes outlive a killed worker)'}; ${user}; ${memory}`];
  if (found.refused) {
    lines.push(`forge: sandbox REFUSES every run: ${found.refused}`);
    return lines;
  }
  if (!found.hermetic) {
    lines.push(
      "forge: sandbox filesystem: NOT contained (process-group, chosen by FORGE_SANDBOX_CONTAINMENT): a tool can read what Forge's user can, and write what the run's user can",
    );
    lines.push("forge: sandbox network: NOT contained (process-group): a tool reaches the host's loopback and networks, the platform's services included");
  } else {
    lines.push(
      `forge: sandbox filesystem: a read-only view per run (bubblewrap${mode === 'user-pid-namespace' ? ', in a user namespace' : ''}): only the run's own directory and /tmp are writable; FORGE_HOME, agent-tools/ and the project are not in it`,
    );
    const policy = limits.network ?? INTERNET;
    if (policy.kind === 'none') lines.push('forge: sandbox network: a namespace per run with loopback only (FORGE_SANDBOX_NETWORK=none)');
    else if (!found.hermetic.slirp4netns || found.noUserNetwork) {
      lines.push(
        `forge: sandbox network: REFUSES every run: ${describeNetworkPolicy(policy)} needs user-mode networking, and ${found.noUserNetwork ?? 'slirp4netns is missing'}; or set FORGE_SANDBOX_NETWORK=none`,
      );
    } else if (policy.kind === 'allow' && !found.hermetic.nft) {
      lines.push('forge: sandbox network: REFUSES every run: an allowlist needs nftables (Debian: apt-get install nftables)');
    } else {
      lines.push(
        `forge: sandbox network: a namespace per run (slirp4netns), ${policy.kind === 'internet' ? 'public destinations only' : describeNetworkPolicy(policy)}; never the host's loopback, its own addresses, or private, link-local and reserved ranges`,
      );
    }
  }
  const passed = limits.envPassthrough.length > 0 ? ` and ${limits.envPassthrough.join(', ')}` : '';
  lines.push(`forge: sandbox environment: PATH, HOME, TMPDIR, LANG${passed}; nothing else of the worker's`);
  return lines;
}
