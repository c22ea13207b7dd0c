import { harnessNodeFlags, type HarnessSnapshots } from './harness-snapshot';
import { bootHarness, disposeHarness, type BootedHarness, type SpareHarnesses } from './run';
import { resolveLimits, type SandboxLimits } from './limits';
import type { RunnableModule } from './module-format';
import type { PreloadSet } from './preload';

/**
 * What a harness is started with: its V8 heap, address space, process limit and user, its containment, cgroup and
 * directory, and its environment (the passthrough variables' values as they are now). Everything else in the limits
 * applies per run.
 */
function bootKey(limits: SandboxLimits): string {
  const env = [...limits.envPassthrough].sort().map((name) => [name, process.env[name] ?? null]);
  const placement = [limits.containment ?? null, limits.cgroup ?? true, limits.tmpDir ?? null, limits.network ?? null];
  return JSON.stringify([limits.memoryMb, limits.virtualOverheadMb, limits.maxProcesses, limits.userIdBase, placement, env]);
}

/**
 * How long the replacement of a taken spare waits while another spare is still ready. A deployment takes a spare for
 * its test beside its type check, on a machine of two cores: a replacement booting at once (~100-150 ms of CPU: Node,
 * the harness, its snapshot) was a third process on those cores, in the middle of the very deployment the spare sped
 * up, and added ~20-40 ms to it (BENCHMARKS.md, 2026-11-30, fourteenth session). A take that leaves no spare refills
 * at once, so back-to-back runs never wait for this.
 */
export const SPARE_REPLACEMENT_DELAY_MS = 300;

/**
 * Keeps `size` sandbox processes started ahead of demand, so a run does not wait for Node to boot (~30 ms of a
 * sandbox run's ~40 ms floor on the reference machine).
 *
 * Nothing about isolation changes: every spare is a fresh contained process (own PID namespace, limits, private
 * directory) that has run no code but the harness and is blocked reading its one run from fd 3; it serves exactly one
 * run and is then killed like any other. A spare is only handed to a run whose boot-time limits (memory, environment
 * passthrough) equal the pool's; any other run starts its own process, as without a pool. Taking a spare starts its
 * replacement in the background: at once when it was the last one, else after {@link SPARE_REPLACEMENT_DELAY_MS}.
 */
export class SandboxPool implements SpareHarnesses {
  private readonly limits: SandboxLimits;
  private readonly spares: { harness: BootedHarness; key: string }[] = [];
  /** Spares being started; close() waits for them, so that nothing it started outlives it. */
  private readonly booting = new Set<Promise<void>>();
  private closed = false;
  /** A replacement waiting for SPARE_REPLACEMENT_DELAY_MS (refillSoon). */
  private refillTimer: NodeJS.Timeout | undefined;
  private readonly replaceAfterMs: number;
  /** Spares handed out to runs. */
  served = 0;
  /** Of them, those started from a snapshot. */
  servedFromSnapshot = 0;

  /**
   * @param options.preload the packages each spare loads while it waits (src/sandbox/preload.ts), so a tool's imports
   * of them are cache hits; none by default.
   * @param options.startWhen the first spares start once it settles, not at once (a run that comes first starts the
   * spares with its own): a worker's start, whose workflow thread they would slow on a small machine.
   * @param options.snapshots where spares find startup snapshots holding the configured preloads already loaded
   * (harness-snapshot.ts); spares boot the usual way until one is built, and whenever none can be.
   * @param options.replaceAfterMs how long a taken spare's replacement waits while another is ready
   * ({@link SPARE_REPLACEMENT_DELAY_MS} by default; 0: at once).
   */
  constructor(
    limits: Partial<SandboxLimits>,
    readonly size: number,
    private readonly options: { preload?: PreloadSet; startWhen?: Promise<unknown>; snapshots?: HarnessSnapshots; replaceAfterMs?: number } = {},
  ) {
    this.limits = resolveLimits(limits);
    this.replaceAfterMs = options.replaceAfterMs ?? SPARE_REPLACEMENT_DELAY_MS;
    if (options.startWhen) {
      void options.startWhen.catch(() => undefined).then(() => this.refill());
    } else this.refill();
  }

  /** Notes what a run's module (its compiled ES module) imports and the form it runs in, for the spares started from now on. */
  learn(code: string, format: RunnableModule['format']): void {
    this.options.preload?.learn(code, format);
  }

  /** A started harness for a run with these limits, or undefined (none ready, or other boot-time limits). */
  take(limits: SandboxLimits): BootedHarness | undefined {
    const key = bootKey(limits);
    if (this.closed || key !== bootKey(this.limits)) return undefined;
    let spare: { harness: BootedHarness; key: string } | undefined;
    while ((spare = this.spares.shift())) {
      // A spare that died while waiting (killed from outside), or that was started with an environment that has
      // changed since, is never handed out.
      if (!spare.harness.contained.exit && spare.key === key) break;
      // One that died waiting may have started from a blob that no longer loads (damaged on disk): the next spares
      // boot without it, and the next build makes it anew.
      if (spare.harness.contained.exit && spare.harness.snapshot) this.options.snapshots?.distrust(spare.harness.snapshot);
      void disposeHarness(spare.harness);
    }
    // A replacement used to wait 250 ms while another spare was ready, because forking this (large) process blocked
    // its event loop; the spawn helper (src/process/spawner.ts) forks now. It waits again, for the cores this time
    // (SPARE_REPLACEMENT_DELAY_MS), and only while another spare is ready.
    if (this.spares.length > 0 && this.replaceAfterMs > 0) this.refillSoon();
    else this.refill();
    if (spare) this.served++;
    if (spare?.harness.snapshot) this.servedFromSnapshot++;
    return spare?.harness;
  }

  /** How many spares are started and waiting (for tests and the operator). */
  get ready(): number {
    return this.spares.length;
  }

  /** Kills every spare and removes its directory; runs already handed out are not affected. Idempotent. */
  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.refillTimer);
    await Promise.all(this.booting);
    await Promise.all(this.spares.splice(0).map((s) => disposeHarness(s.harness)));
  }

  /**
   * How a run that found no spare starts its own process: from the snapshot too, when its limits are the pool's (the
   * snapshot's flags) and there is one. It preloads nothing else: what the tool imports it loads itself, either way.
   */
  ownBoot(limits: SandboxLimits): { snapshot?: string } {
    if (bootKey(limits) !== bootKey(this.limits)) return {};
    const snapshot = this.snapshotFor(this.options.preload?.snapshotFiles() ?? []);
    return snapshot ? { snapshot } : {};
  }

  /** What the next spare loads: from a snapshot when one holds the configured packages, the rest as files. */
  private bootOptions(): { preload?: string[]; snapshot?: string } {
    const files = this.options.preload?.files();
    const inSnapshot = this.options.preload?.snapshotFiles() ?? [];
    const snapshot = this.snapshotFor(inSnapshot);
    return snapshot ? { preload: files?.filter((file) => !inSnapshot.includes(file)), snapshot } : { preload: files };
  }

  private snapshotFor(entries: string[]): string | undefined {
    return this.options.snapshots?.blobFor(harnessNodeFlags(this.limits), entries);
  }

  /** Refills after replaceAfterMs, unless a refill comes first (it clears this). Unref'd: it keeps no process alive. */
  private refillSoon(): void {
    if (this.refillTimer) return;
    this.refillTimer = setTimeout(() => this.refill(), this.replaceAfterMs);
    this.refillTimer.unref();
  }

  private refill(): void {
    if (this.refillTimer) {
      clearTimeout(this.refillTimer);
      this.refillTimer = undefined;
    }
    while (!this.closed && this.spares.length + this.booting.size < this.size) {
      const key = bootKey(this.limits);
      const boot: Promise<void> = bootHarness(this.limits, this.bootOptions())
        .then(
          async (harness) => {
            if (this.closed) await disposeHarness(harness);
            else this.spares.push({ harness, key });
          },
          () => {
            // Could not start one (EMFILE, ENOSPC): runs start their own, whose verdict carries the reason; the next
            // take() tries again.
          },
        )
        .finally(() => this.booting.delete(boot));
      this.booting.add(boot);
    }
  }
}
