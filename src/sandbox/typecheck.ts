import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { Worker } from 'node:worker_threads';
import type { TypeCheckError } from '../contract/sandbox-verdict';
import { registerProcessHelper } from '../process/process-helpers';
import { Lru } from './lru';
import { projectNodeModules } from './paths';
import { TypecheckCrashedError, TypecheckInterruptedError, TypecheckTimeoutError } from './errors';
import { TypecheckPasses } from './typecheck-passes';

/** What the checker found in one tool module. */
export interface TypecheckResult {
  /** The errors, at most `maxErrors` of them, in the order the checker reports them. */
  errors: TypeCheckError[];
  /** How many more errors there were beyond those listed. */
  truncated: number;
  /** Wall time of this check, including the wait for the checker's thread (0 for a result served from the cache). */
  durationMs: number;
}

export interface TypecheckerOptions {
  /** The node_modules whose packages and @types tools are checked against (default: Forge's own dependencies'). */
  nodeModules?: string;
  /** Longest one check may take before its thread is ended (default 20 s: under a fast step's 30 s). */
  timeoutMs?: number;
  /** Most errors listed per check (default 50). */
  maxErrors?: number;
  /**
   * Where checks that passed are remembered across processes (a worker passes `$FORGE_HOME/typecheck-passes`), so that
   * a restarted worker does not run its cold checker again for a module its predecessor passed (typecheck-passes.ts).
   */
  passesDir?: string;
}

type Checked = { errors: TypeCheckError[]; truncated: number; files?: string[]; digest?: string };
type Reply = ({ id: number; ok: true } & Checked) | { id: number; ok: false; error: string };

interface Pending {
  resolve(result: Checked): void;
  reject(err: Error): void;
}

/**
 * The TypeScript checker for tool modules, warm: a worker thread (src/sandbox/typecheck-thread.cjs) that keeps one
 * LanguageService, so the declarations of the lib, @types/node and every package a tool imported stay parsed from one
 * check to the next, and a check of a small zod tool re-reads only the tool. A thread so that a first check (seconds
 * for a package with large types) never stalls the caller's event loop. Checks run one at a time, in order.
 */
export class ToolTypechecker {
  private thread: Worker | undefined;
  private readonly pending = new Map<number, Pending>();
  private nextId = 0;
  private readonly cache = new Lru<{ errors: TypeCheckError[]; truncated: number }>(128);
  private readonly nodeModules: string;
  private readonly timeoutMs: number;
  private readonly maxErrors: number;
  private readonly passes: TypecheckPasses | undefined;
  /** The thread has answered a check: it is warm, and remembered passes are no longer read. */
  private answered = false;

  constructor(options: TypecheckerOptions = {}) {
    this.nodeModules = options.nodeModules ?? projectNodeModules();
    this.timeoutMs = options.timeoutMs ?? 20_000;
    this.maxErrors = options.maxErrors ?? 50;
    this.passes = options.passesDir ? new TypecheckPasses(options.passesDir) : undefined;
  }

  /**
   * The type errors of one tool module named `name` (errors are located in `<name>.ts`, as compile errors are).
   * @throws TypecheckTimeoutError, TypecheckCrashedError (a verdict on this module), TypecheckInterruptedError (retry)
   */
  async check(source: string, name: string): Promise<TypecheckResult> {
    const started = performance.now();
    // A deployment's step may run again (a retried local activity); the same module gets the same answer.
    const key = createHash('sha256').update(name).update('\0').update(source).digest('hex');
    const cached = this.cache.get(key);
    if (cached) return { ...cached, durationMs: 0 };
    // Only while this process's checker has not answered yet (it is cold: seconds), a pass remembered on disk; a warm
    // checker answers a small module in about the time reading an entry takes.
    const passKey = this.passes && createHash('sha256').update(checkerFingerprint(this.nodeModules)).update(key).digest('hex');
    if (passKey && !this.answered && this.passes!.passed(passKey)) {
      const passed = { errors: [], truncated: 0 };
      this.cache.set(key, passed);
      return { ...passed, durationMs: Math.round(performance.now() - started) };
    }
    const { files, digest, ...result } = await this.request(name, source);
    this.cache.set(key, result);
    // Written before the check answers (~1 ms): a worker killed right after its step must find it on restart.
    if (passKey && files && digest && result.errors.length === 0) await this.passes!.remember(passKey, files, digest);
    return { ...result, durationMs: Math.round(performance.now() - started) };
  }

  /**
   * Starts the thread and parses what every check needs (the lib, @types/node, zod's types) ahead of the first
   * deployment. Never throws: a checker that cannot start says so on the first real check.
   */
  async warm(): Promise<void> {
    // Not holding the process open: a worker (or a test) that stops before the warm-up ends need not wait for it.
    const warmUp = "import { z } from 'zod';\nexport default { schema: z.object({ n: z.number() }) };\n";
    await this.request('warm_up', warmUp, { hold: false }).catch(() => undefined);
  }

  /** Ends the thread (a later check starts a new one). */
  async close(): Promise<void> {
    const thread = this.thread;
    this.thread = undefined;
    for (const p of this.pending.values()) p.reject(new TypecheckInterruptedError());
    this.pending.clear();
    await thread?.terminate();
  }

  private request(name: string, source: string, { hold = true } = {}): Promise<Checked> {
    const thread = this.started();
    const id = ++this.nextId;
    return new Promise((resolve, reject) => {
      const timer: NodeJS.Timeout = setTimeout(() => {
        // The thread is busy with this check and cannot be interrupted otherwise; the checks queued behind it are told
        // to try again, on a new thread.
        this.pending.delete(id);
        reject(new TypecheckTimeoutError(this.timeoutMs));
        void this.close();
      }, this.timeoutMs);
      this.pending.set(id, {
        resolve: (r) => {
          clearTimeout(timer);
          resolve(r);
        },
        reject: (err) => {
          clearTimeout(timer);
          reject(err);
        },
      });
      // Held open only while a check is waiting: an idle checker never keeps a process (the CLI, a test) alive.
      if (hold) thread.ref();
      else timer.unref();
      thread.postMessage({ id, name, source });
    });
  }

  private settle(reply: Reply): void {
    const p = this.pending.get(reply.id);
    if (!p) return;
    this.pending.delete(reply.id);
    if (this.pending.size === 0) this.thread?.unref();
    if (reply.ok) {
      this.answered = true;
      p.resolve({ errors: reply.errors, truncated: reply.truncated, files: reply.files, digest: reply.digest });
    } else p.reject(new TypecheckCrashedError(`the type checker failed on this module: ${reply.error.split('\n')[0]}`));
  }

  private started(): Worker {
    if (this.thread) return this.thread;
    const thread = new Worker(threadPath(), { workerData: { nodeModules: this.nodeModules, maxErrors: this.maxErrors } });
    thread.unref();
    thread.on('message', (reply: Reply) => this.settle(reply));
    const fail = (err: Error) => {
      if (this.thread !== thread) return;
      this.thread = undefined;
      // The check in flight is the one that took the thread down; the others only waited behind it.
      const [first, ...rest] = [...this.pending.values()];
      this.pending.clear();
      first?.reject(new TypecheckCrashedError(`the type checker's thread died: ${err.message}`, { cause: err }));
      for (const p of rest) p.reject(new TypecheckInterruptedError());
    };
    thread.on('error', fail);
    thread.on('exit', (code) => fail(new Error(`exited with code ${code}`)));
    this.thread = thread;
    return thread;
  }
}

/** Under FORGE_HOME: the checks that passed, kept across a worker's restarts (TypecheckerOptions.passesDir). */
export const TYPECHECK_PASSES_DIR = 'typecheck-passes';

let shared: ToolTypechecker | undefined;
// Ending it ends its thread only: the next check starts a new one.
registerProcessHelper(async () => shared?.close());

/**
 * The process's checker, created on first use (with `options`, which a later call cannot change) and kept warm for
 * every later deployment.
 */
export function sharedTypechecker(options?: TypecheckerOptions): ToolTypechecker {
  shared ??= new ToolTypechecker(options);
  return shared;
}

/** The type errors of one tool module, from the process's warm checker. */
export function typecheckTool(source: string, name: string): Promise<TypecheckResult> {
  return sharedTypechecker().check(source, name);
}

/**
 * One line for a result that has errors: `the source does not type-check: calc.ts:3:9: TS2322: ... (and 2 more)`,
 * shaped like a compile rejection's.
 */
export function typeErrorsMessage(result: Pick<TypecheckResult, 'errors' | 'truncated'>): string {
  const more = result.errors.length - 1 + result.truncated;
  return `the source does not type-check: ${result.errors[0]?.message ?? 'the checker reported errors'}${more > 0 ? ` (and ${more} more)` : ''}`;
}

const fingerprints = new Map<string, string>();

/**
 * What a remembered pass also depends on beyond the files it read: the checker's code (its options are there) and
 * TypeScript's version, and which node_modules it resolves in. Computed once per process.
 */
function checkerFingerprint(nodeModules: string): string {
  let fingerprint = fingerprints.get(nodeModules);
  if (fingerprint === undefined) {
    const hash = createHash('sha256').update(nodeModules).update('\0').update(readFileSync(threadPath()));
    hash.update('\0').update(readFileSync(join(dirname(require.resolve('typescript')), '..', 'package.json')));
    fingerprint = hash.digest('hex');
    fingerprints.set(nodeModules, fingerprint);
  }
  return fingerprint;
}

/**
 * src/sandbox/typecheck-thread.cjs: next to this file under ts-jest, and under the package root's src/ when this runs
 * from dist/ (the build compiles .ts only).
 */
function threadPath(): string {
  let dir = __dirname;
  for (;;) {
    const beside = join(dir, 'typecheck-thread.cjs');
    if (existsSync(beside)) return beside;
    const candidate = join(dir, 'src', 'sandbox', 'typecheck-thread.cjs');
    if (existsSync(candidate)) return candidate;
    if (dirname(dir) === dir) throw new Error(`No src/sandbox/typecheck-thread.cjs found above ${__dirname}.`);
    dir = dirname(dir);
  }
}
