import { containment } from './containment';
import { resolveLimits, type SandboxLimits } from './limits';
import { runCgroupSupport } from './run-cgroup';

/** One line for the operator's start-up log: how sandbox runs are contained on this host, and what is missing. */
export function describeIsolation(overrides: Partial<SandboxLimits> = {}): string {
  const limits = resolveLimits(overrides);
  const { mode, setpriv, privateProc } = containment(limits.containment);
  const root = process.getuid?.() === 0;
  const user =
    root && limits.userIdBase > 0
      ? `each run as its own user (uids from ${limits.userIdBase})`
      : `runs as Forge's own user (${root ? 'FORGE_SANDBOX_UID_BASE=0' : 'not root'})`;
  const cgroup = runCgroupSupport(limits.cgroup ?? true);
  const memory = cgroup.base
    ? `a memory cgroup per run (cgroup v${cgroup.base.version})`
    : `per-process memory limits only (${cgroup.reason ?? 'no cgroup'})`;
  const proc = privateProc ? ', own /proc' : mode === 'process-group' ? '' : ', host /proc (no mount namespace)';
  return `forge: sandbox containment: ${mode}${proc}${setpriv ? '' : ' (no setpriv: sandboxes outlive a killed worker)'}; ${user}; ${memory}`;
}
