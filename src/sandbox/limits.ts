import { availableParallelism } from 'node:os';
import type { ContainmentMode } from './containment';
import type { NetworkPolicy } from './network';

/** Bounds of one sandbox run. Every one has a default; callers and configuration override them. */
export interface SandboxLimits {
  /** Platform maximum wall clock per run; a tool's own `timeoutMs` can only lower it. */
  maxTimeoutMs: number;
  /** Memory for the tool process: V8's old space, and (with {@link virtualOverheadMb}) its address space. */
  memoryMb: number;
  /**
   * Address space granted on top of {@link memoryMb}. Node reserves ~0.75 GiB of virtual memory before running any
   * code (code range, thread stacks), so RLIMIT_AS must leave room for that; off-heap buffers beyond it fail.
   */
  virtualOverheadMb: number;
  /** stdout + stderr bytes; beyond it the process is killed and the run is `output_limit`. */
  outputBytes: number;
  /** The serialised result's bytes. */
  resultBytes: number;
  /** The TypeScript source's bytes. */
  sourceBytes: number;
  /** How much of stderr comes back in the verdict. */
  stderrTailBytes: number;
  /** Names of the parent's environment variables the tool may see; nothing else of it is passed on. */
  envPassthrough: string[];
  /**
   * Processes (and threads) a run may have at once (RLIMIT_NPROC). Enforced when the run has a user of its own (see
   * {@link userIdBase}); the kernel does not apply it to root.
   */
  maxProcesses: number;
  /**
   * When Forge runs as root, each run's processes run as a user of their own, a uid picked at random from
   * [userIdBase, userIdBase + 2^24): they cannot read or signal Forge's processes, write the project's files, reach
   * cgroups or mounts, or see another run's. 0 runs tools as Forge's own user.
   */
  userIdBase: number;
  /**
   * How runs are contained (see containment.ts). Unset: the best mode the machine allows, probed once per process;
   * `process-group` forces the fallback for hosts known to refuse namespaces.
   */
  containment?: ContainmentMode;
  /** `false`: no memory cgroup per run, only per-process memory limits. Unset or `true`: a cgroup where Forge can make one. */
  cgroup?: boolean;
  /** What runs may reach over the network (FORGE_SANDBOX_NETWORK; default public destinations only: network.ts). */
  network?: NetworkPolicy;
  /** Where each run's private directory is made (runs' own users must be able to traverse it). Unset: /dev/shm when writable, else the OS temp dir. */
  tmpDir?: string;
}

export { RUN_UID_RANGE } from '../contract/limits';

export const DEFAULT_LIMITS: SandboxLimits = {
  maxTimeoutMs: 30_000,
  memoryMb: 512,
  virtualOverheadMb: 1024,
  outputBytes: 1024 * 1024,
  resultBytes: 4 * 1024 * 1024,
  sourceBytes: 10 * 1024 * 1024,
  stderrTailBytes: 4096,
  envPassthrough: [],
  maxProcesses: 512,
  userIdBase: 2_100_000_000,
};

export function resolveLimits(overrides: Partial<SandboxLimits> = {}): SandboxLimits {
  const limits = { ...DEFAULT_LIMITS };
  for (const [key, value] of Object.entries(overrides) as [keyof SandboxLimits, unknown][]) {
    if (value !== undefined) (limits as Record<string, unknown>)[key] = value;
  }
  return limits;
}

/** A sane default for how many sandboxes run at once on this machine. */
export function defaultConcurrency(): number {
  return availableParallelism();
}
