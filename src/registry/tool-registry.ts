import type { SandboxLimits, SandboxStatus } from '../sandbox';
import { loadConfig } from '../config';
import { directorySource } from './directory-source';
import { RegistryClosedError, RegistryLoadError, RegistryWaitTimeoutError } from './errors';
import { coalesce } from './coalesce';
import { PreloadSet } from '../sandbox/preload';
import { childPerCallInvoker, type Invoker } from './invoker';
import type { Snapshot, ToolSource } from './source';
import type { ToolDescriptor } from './types';

/** How a registry is tuned; every field has a default. */
export interface ToolRegistryOptions {
  /** Sandbox limits for every call (default: the configuration's, `loadConfig().sandbox.limits`). Ignored when `invoker` is given. */
  limits?: Partial<SandboxLimits>;
  /** Calls running at once with the default invoker (default: the core count). */
  concurrency?: number;
  /**
   * Sandbox processes the default invoker keeps started ahead of calls, so a call skips Node's start-up (~30 ms) and
   * the loading of the packages tools import (~50 ms for zod). Each is an idle Node process (~50 MB) until a call takes
   * it; default 1 (0: every call starts its own, as a one-shot caller such as `forge call` wants).
   */
  spares?: number;
  /**
   * What spares preload (default: the configuration's FORGE_SANDBOX_PRELOAD / _MAX, i.e. zod and what the tools
   * called lately import).
   */
  preload?: { packages: string[]; max: number };
  /** Replaces the child-per-call invoker (a pooled runner, for instance). */
  invoker?: Invoker;
  /** Directory mode: how often active.json is checked besides fs.watch (default 500 ms). */
  pollIntervalMs?: number;
  /** Directory mode: false relies on the poll alone (where fs.watch misbehaves, e.g. some network file systems). */
  fsWatch?: boolean;
  /** Told about reloads that failed (the registry keeps its tools and retries); default: one line on stderr. */
  onReloadError?: (error: unknown) => void;
}

/**
 * Where to load from: the agent-tools directory (no database needed), or any other source, such as the database's
 * (`databaseSource(database)` in src/registry/database-source.ts). A source rather than a database handle here: the
 * handle's type is drizzle's, and the SDK's declarations must not pull drizzle's (which fail to type-check without the
 * drivers it does not install) into every program that imports ToolRegistry.
 */
export type ToolRegistrySource = { dir: string } | { source: ToolSource };

/** A tool call's outcome. Tool failures are results, never exceptions. */
export type InvokeResult =
  | { ok: true; name: string; version: number; output: unknown; durationMs: number }
  | {
      ok: false;
      name: string;
      version?: number;
      status: InvokeFailureStatus;
      error: string;
      durationMs: number;
      /** The sandbox's details (schema issues, limit hit, stack), when the call got that far. */
      diagnostics?: unknown;
      stderrTail?: string;
    };

/**
 * A sandbox verdict other than `passed`, or: `not_found` (no such active tool), `unavailable` (its files could not be
 * read), `closed` (the registry was closed).
 */
export type InvokeFailureStatus = Exclude<SandboxStatus, 'passed'> | 'not_found' | 'unavailable' | 'closed';

export interface InvokeOptions {
  /** Aborting ends the call as `timeout` and kills its process tree. */
  signal?: AbortSignal;
  /** Lowers the platform's time limit for this call. */
  timeoutMs?: number;
}

/** What one reload changed, as told to `onChange` listeners. */
export interface RegistryChange {
  generation: number;
  added: string[];
  updated: string[];
  removed: string[];
}

const RETRY_MIN_MS = 250;
const RETRY_MAX_MS = 5_000;

/**
 * The active tool versions, as an agent process sees them: loaded at startup, reloaded when they change, invoked in a
 * bounded sandbox child process per call (see {@link childPerCallInvoker} for why).
 *
 * A reload swaps the whole set at once, so a caller never sees half of a change; a reload that fails keeps the tools
 * loaded before and retries with backoff.
 */
export class ToolRegistry {
  private snapshot: Snapshot;
  private closed = false;
  private stopWatching: (() => Promise<void>) | undefined;
  /** Change signals, coalesced: one reload at a time, plus one more if a signal came in while it ran. */
  private readonly reloads = coalesce(() => this.reloadOrRetry(), 0);
  /** What the source's change signals named since the last reload (`all`: a signal without names, or a failed reload). */
  private pendingNames: Set<string> | 'all' = new Set();
  private retryTimer: NodeJS.Timeout | undefined;
  private retryDelayMs = RETRY_MIN_MS;
  private readonly listeners = new Set<(change: RegistryChange) => void>();
  private readonly inFlight = new Set<AbortController>();
  private readonly closeWaiters = new Set<(err: Error) => void>();

  private constructor(
    private readonly source: ToolSource,
    private readonly invoker: Invoker,
    private readonly onReloadError: (error: unknown) => void,
    private readonly ownInvoker: Invoker | undefined,
  ) {
    this.snapshot = { generation: Number.NEGATIVE_INFINITY, tools: new Map() };
  }

  /**
   * Opens a registry and loads the active versions. With `{ dir }` it reads `<dir>/active.json` and the manifests and
   * follows changes through fs.watch plus a poll; with `{ source }` it loads and follows that source (the database's reads
   * the store and reloads on TOOLS_CHANNEL notifications; its database handle stays the caller's to close).
   * @throws RegistryLoadError when the first load fails.
   */
  static async open(options: ToolRegistrySource & ToolRegistryOptions): Promise<ToolRegistry> {
    const source =
      'dir' in options ? directorySource(options.dir, { pollIntervalMs: options.pollIntervalMs ?? 500, fsWatch: options.fsWatch ?? true }) : options.source;
    const invoker = options.invoker ?? defaultInvoker(options);
    const onReloadError =
      options.onReloadError ??
      ((err: unknown) => process.stderr.write(`forge registry: reload failed, keeping the loaded tools: ${(err as Error)?.message ?? String(err)}\n`));
    // The registry closes only an invoker it made; one passed in belongs to the caller.
    const registry = new ToolRegistry(source, invoker, onReloadError, options.invoker ? undefined : invoker);
    try {
      // Watch first, so a change landing during the first load is not missed (at worst it causes one extra reload).
      registry.stopWatching = await source.watch((names) => registry.scheduleReload(names));
      const first = await source.load(undefined);
      if (first !== 'unchanged') registry.snapshot = first;
    } catch (err) {
      await registry.close();
      throw new RegistryLoadError(source.label, { cause: err });
    }
    return registry;
  }

  /** The generation of the loaded state (active.json's in directory mode, a local counter in database mode). */
  get generation(): number {
    return this.snapshot.generation;
  }

  /** The active version of `name`, or undefined when no such tool is active. */
  get(name: string): ToolDescriptor | undefined {
    return this.snapshot.tools.get(name)?.descriptor;
  }

  /** Every active tool, by name. */
  list(): ToolDescriptor[] {
    return [...this.snapshot.tools.values()].map((t) => t.descriptor).sort((a, b) => (a.name < b.name ? -1 : 1));
  }

  /**
   * Calls the active version of `name` with `input`, in a bounded sandbox child: the tool's own schema validates the
   * input there (`invalid` when it fails), and time, memory and output are limited. Never throws for what the tool does;
   * an unknown tool is `not_found` with the available names in `error`.
   */
  async invoke(name: string, input: unknown, options: InvokeOptions = {}): Promise<InvokeResult> {
    const started = performance.now();
    const elapsed = () => Math.round(performance.now() - started);
    if (this.closed) return { ok: false, name, status: 'closed', error: 'the tool registry is closed', durationMs: elapsed() };
    const tool = this.snapshot.tools.get(name);
    if (!tool) return { ok: false, name, status: 'not_found', error: this.notFoundMessage(name), durationMs: elapsed() };
    const { version } = tool.descriptor;
    let compiledJs: string;
    try {
      compiledJs = await tool.compiledJs();
    } catch (err) {
      const error = `the compiled module of ${name} v${version} could not be read: ${(err as Error).message}`;
      return { ok: false, name, version, status: 'unavailable', error, durationMs: elapsed() };
    }
    // Our own controller, so that close() can end calls still running.
    const controller = new AbortController();
    const forward = () => controller.abort();
    if (options.signal?.aborted) controller.abort();
    options.signal?.addEventListener('abort', forward, { once: true });
    this.inFlight.add(controller);
    try {
      const { timeoutMs } = options;
      const verdict = await this.invoker.invoke({ name, version, compiledJs, input, signal: controller.signal, timeoutMs });
      if (verdict.status === 'passed') return { ok: true, name, version, output: verdict.output, durationMs: elapsed() };
      return {
        ok: false,
        name,
        version,
        status: verdict.status,
        error: verdict.error ?? `the call ended ${verdict.status}`,
        durationMs: elapsed(),
        ...(verdict.diagnostics ? { diagnostics: verdict.diagnostics } : {}),
        ...(verdict.stderrTail ? { stderrTail: verdict.stderrTail } : {}),
      };
    } catch (err) {
      // A custom invoker broke its contract; still a result, not an exception.
      const error = `the invoker failed: ${(err as Error).message}`;
      return { ok: false, name, version, status: 'crashed', error, durationMs: elapsed() };
    } finally {
      this.inFlight.delete(controller);
      options.signal?.removeEventListener('abort', forward);
    }
  }

  /** Calls `listener` after every reload that changed something; returns the unsubscribe function. */
  onChange(listener: (change: RegistryChange) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /**
   * Resolves once `name`'s loaded state satisfies `predicate` (given the descriptor, or undefined when the tool is not
   * active), or once version `version` is loaded. Checks the current state first.
   * @throws RegistryWaitTimeoutError after `timeoutMs`; RegistryClosedError if the registry closes meanwhile.
   */
  waitFor(name: string, expected: number | ((tool: ToolDescriptor | undefined) => boolean), timeoutMs = 10_000): Promise<ToolDescriptor | undefined> {
    const matches = typeof expected === 'number' ? (t: ToolDescriptor | undefined) => t?.version === expected : expected;
    if (matches(this.get(name))) return Promise.resolve(this.get(name));
    if (this.closed) return Promise.reject(new RegistryClosedError());
    return new Promise((resolve, reject) => {
      const finish = () => {
        clearTimeout(timer);
        unsubscribe();
        this.closeWaiters.delete(onClose);
      };
      const onClose = (err: Error) => {
        finish();
        reject(err);
      };
      const timer = setTimeout(() => onClose(new RegistryWaitTimeoutError(name, timeoutMs, this.get(name)?.version)), timeoutMs);
      const unsubscribe = this.onChange(() => {
        const now = this.get(name);
        if (!matches(now)) return;
        finish();
        resolve(now);
      });
      this.closeWaiters.add(onClose);
    });
  }

  /** Stops watching, ends calls still running (their process trees are killed) and rejects pending waits. Idempotent. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.retryTimer) clearTimeout(this.retryTimer);
    for (const controller of this.inFlight) controller.abort();
    for (const reject of [...this.closeWaiters]) reject(new RegistryClosedError());
    this.listeners.clear();
    await this.stopWatching?.().catch(() => undefined);
    await this.reloads.flush();
    await this.ownInvoker?.close?.().catch(() => undefined);
  }

  private notFoundMessage(name: string): string {
    const names = [...this.snapshot.tools.keys()].sort();
    const shown = names.length > 50 ? `${names.slice(0, 50).join(', ')} and ${names.length - 50} more` : names.join(', ');
    return `no active tool named ${JSON.stringify(name)}; available: ${names.length === 0 ? '(none)' : shown}`;
  }

  private scheduleReload(names?: readonly string[]): void {
    if (this.closed) return;
    if (!names) this.pendingNames = 'all';
    else if (this.pendingNames !== 'all') for (const name of names) this.pendingNames.add(name);
    this.reloads.trigger();
  }

  /** One reload; a failure is reported and retried later with backoff (the loaded tools stay meanwhile). */
  private async reloadOrRetry(): Promise<void> {
    try {
      await this.reloadOnce();
      this.retryDelayMs = RETRY_MIN_MS;
    } catch (err) {
      if (this.closed) return;
      this.onReloadError(err);
      if (this.retryTimer) clearTimeout(this.retryTimer);
      this.retryTimer = setTimeout(() => this.scheduleReload(), this.retryDelayMs);
      this.retryTimer.unref();
      this.retryDelayMs = Math.min(this.retryDelayMs * 2, RETRY_MAX_MS);
    }
  }

  private async reloadOnce(): Promise<void> {
    const previous = this.snapshot;
    const pending = this.pendingNames;
    this.pendingNames = new Set();
    let next: Snapshot | 'unchanged';
    try {
      next = await this.source.load(previous, pending === 'all' ? undefined : { names: pending });
    } catch (err) {
      // The retry reloads everything: the names of this attempt are not lost.
      this.pendingNames = 'all';
      throw err;
    }
    if (next === 'unchanged' || this.closed) return;
    this.snapshot = next;
    const change = diff(previous, next);
    for (const listener of [...this.listeners]) {
      try {
        listener(change);
      } catch {
        // A listener's bug must not stop the others or the reload loop.
      }
    }
  }
}

function diff(before: Snapshot, after: Snapshot): RegistryChange {
  const change: RegistryChange = { generation: after.generation, added: [], updated: [], removed: [] };
  if (after.changed) {
    // The source says which names moved: a reload after one deployment costs that one name, not every tool.
    for (const name of [...after.changed].sort()) {
      const [old, tool] = [before.tools.get(name), after.tools.get(name)];
      if (!old && tool) change.added.push(name);
      else if (old && !tool) change.removed.push(name);
      else if (old && tool && old !== tool) change.updated.push(name);
    }
    return change;
  }
  for (const [name, tool] of after.tools) {
    const old = before.tools.get(name);
    if (!old) change.added.push(name);
    else if (old !== tool) change.updated.push(name);
  }
  for (const name of before.tools.keys()) if (!after.tools.has(name)) change.removed.push(name);
  return change;
}

/** The child-per-call invoker with the configuration's limits and preload where the caller gave none. */
function defaultInvoker(options: ToolRegistryOptions): Invoker {
  const config = options.limits && options.preload ? undefined : loadConfig().sandbox;
  const preload = options.preload ?? (config as NonNullable<typeof config>).preload;
  return childPerCallInvoker({
    limits: options.limits ?? config?.limits,
    concurrency: options.concurrency,
    spares: options.spares ?? 1,
    preload: new PreloadSet(preload.packages, preload.max),
  });
}
