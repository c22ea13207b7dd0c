// @ts-check
/**
 * The sandbox harness: the first code that runs in the bounded child process, before any of the tool's.
 *
 * Plain JavaScript on purpose: the child is a bare `node` with nothing to compile TypeScript, and the harness requires
 * only Node built-ins so that a sandbox run costs little more than a bare fork (bench/sandbox.ts measures it).
 *
 * How a tool cannot forge its verdict:
 * - The parent decides the verdict. It treats stdout and stderr as opaque bytes (counted, tail kept) and never parses
 *   them, so nothing a tool prints there can become a verdict.
 * - The harness's only channel to the parent is fd 3. Its first act, before the tool's module is even imported, is to
 *   read the run's 256-bit key from it (raw bytes, never a string) and absorb it into the HMAC states of
 *   frame-mac.cjs, which then zeroes the bytes (no node:crypto in here: it would cost every run ~6 ms to load). Every
 *   frame the harness sends carries an HMAC of its number and body under that key, computed from the body's code
 *   units by frame-mac itself; the parent drops every frame whose MAC does not check out or whose number is not past
 *   the last accepted one, and it takes the first genuine result only. A tool can write to fd 3, or even swap fd 3
 *   for a file and read what the harness writes, but it only ever sees MACs of the harness's own frames, never the
 *   key, so it cannot make a frame of its own that the parent accepts.
 * - The tool runs in this process and can rewrite any built-in it reaches (JSON.stringify, Object.prototype.toJSON,
 *   Promise.prototype.then, Node's internal bindings, ...). So everything the harness does once the tool's module has
 *   loaded goes through intrinsics captured below, before it loaded: frames are written by hand over primitives
 *   (`frameJson`), so that a toJSON on Object.prototype cannot turn a failure into "passed"; the MAC is plain
 *   arithmetic on state the tool cannot reach; the settlement of `execute` is observed through the captured `then` (an
 *   `await` consults `constructor` and `then` on the promise, so a patched prototype could turn a rejection into a
 *   resolution). What a tool patches can change its own output or stall the harness (then the verdict is `timeout` or
 *   `crashed`), never make a failure read `passed`.
 * - Each frame starts with a newline, so a partial line the tool wrote to fd 3 before cannot swallow it.
 * - A tool that throws after printing or sending a fake "passed" therefore still ends `failed`: the harness reports
 *   the throw, and the fake frame never counted. A tool that kills or exits the process before the harness reports
 *   ends `crashed`, because a process that ends without a genuine result is never `passed`.
 * - What stays outside this guarantee: code that reads the process's raw memory, where the HMAC states live, through
 *   node:inspector on its own main thread. /proc/self/mem is closed once the harness has switched to the run's own
 *   user (see becomeRunUser); a heap snapshot (node:v8) holds no key: the states are typed-array contents, and the key
 *   never becomes a string. Only a separate process or VM would close the inspector too.
 */
'use strict';
// CommonJS, not an ES module: Node starts a CommonJS entry ~3 ms sooner (the ESM loader initialises only when the
// tool's module is imported), and every sandbox run pays that.
const { accessSync, constants: fsConstants, readSync, writeSync } = require('node:fs');
const { pathToFileURL } = require('node:url');
const { createRequire } = require('node:module');
const { isPromise } = require('node:util').types;
const { frameMac } = require('./frame-mac.cjs');

// Intrinsics the harness uses after the tool's module loaded, captured while no tool code exists (see above).
const stringify = JSON.stringify;
const objectKeys = Object.keys;
const isArray = Array.isArray;
const apply = Reflect.apply;
const promiseThen = Promise.prototype.then;
const stringSlice = String.prototype.slice;
const regExpTest = RegExp.prototype.test;
const toText = String;
const getPrototypeOf = Object.getPrototypeOf;
const objectPrototype = Object.prototype;
const isFiniteNumber = Number.isFinite;
const rangeErrorPrototype = RangeError.prototype;
const OOM_MESSAGE = /allocation failed|out of memory/i;
const byteLength = Buffer.byteLength;
const setTimer = setTimeout;
const clearTimer = clearTimeout;
const clearRepeat = clearInterval;
const atomicsWait = Atomics.wait;
const sleepCell = new Int32Array(new SharedArrayBuffer(4));

const CHANNEL_FD = 3;

// Keeps the event loop alive until the parent has our result: a never-settling promise or a hanging top-level await
// must end as `timeout` (the parent's clock), not as a silent exit with nothing pending. (A tool that digs this timer
// out of Node's timer lists and unrefs it, then never settles, exits without a result: `crashed`, never `passed`.)
const keepAlive = setInterval(() => {}, 2 ** 30);

// process.stdout/stderr are created lazily, and creating one costs milliseconds: note which ones the tool touched, so
// that the flush before reporting waits only for streams that exist.
/** @type {NodeJS.WriteStream[]} */
const touchedStdio = [];
for (const name of ['stdout', 'stderr']) {
  const original = Object.getOwnPropertyDescriptor(process, name);
  if (!original?.get || !original.configurable) continue;
  const originalGet = original.get;
  Object.defineProperty(process, name, {
    configurable: true,
    enumerable: original.enumerable,
    get() {
      const stream = apply(originalGet, process, []);
      let known = false;
      for (let i = 0; i < touchedStdio.length; i++) if (touchedStdio[i] === stream) known = true;
      if (!known) touchedStdio[touchedStdio.length] = stream;
      return stream;
    },
  });
}

// A spare started ahead of its run loads the packages tools import (the entry files its argv names: a pool's
// preload set, src/sandbox/preload.ts) while it waits, so the tool's `import 'zod'` finds it in Node's module cache.
// Before any tool code exists and after the intrinsics above were captured. A package that fails to load here is
// simply loaded (and fails, with the tool's own error) when the tool imports it.
// At a low CPU priority: a spare is refilled the moment a run takes the last one, and its loading must not compete with
// the run that is under way (on 2 cores it slowed the rest of a deployment by as much as it saved). Only where the
// priority can be raised again before the run (as root: CAP_SYS_NICE); otherwise the tool would run niced.
const preloadFiles = process.argv.slice(2);
const { getPriority, setPriority } = require('node:os');
const basePriority = getPriority();
const niced = preloadFiles.length > 0 && process.getuid?.() === 0 && tryPriority(19);
for (const file of preloadFiles) {
  try {
    require(file);
  } catch {
    // See above.
  }
}
process.argv.length = 2;

/** @param {number} priority */
function tryPriority(priority) {
  try {
    setPriority(priority);
    return true;
  } catch {
    return false;
  }
}

const { key, init } = readRun();
// The run is here: back to the priority the process started with, before any of its work.
if (niced) tryPriority(basePriority);
const mac = frameMac(key);
let nextSeq = 0;
const moduleDir = String(init.modulePath).slice(0, String(init.modulePath).lastIndexOf('/') + 1);
const isCommonJs = String(init.modulePath).endsWith('.cjs');
let reported = false;

/**
 * Sends one authenticated frame to the parent; synchronous so no tool code can run between decision and report. The
 * leading newline ends whatever partial line the tool left on fd 3 before; a partial write (interrupted by a signal)
 * is followed by the whole frame again, on a line of its own.
 * @param {Record<string, unknown>} frame
 */
function send(frame) {
  let body;
  try {
    body = frameJson(frame);
  } catch {
    // A getter or toString of the tool's threw while the harness read its error: the verdict still goes out, plainer.
    body = frameJson({
      type: frame.type,
      status: frame.status,
      error: 'the tool changed built-ins the sandbox harness uses, so its error cannot be described',
      diagnostics: { phase: 'process' },
    });
  }
  // The MAC reads the body's code units itself (frame-mac.cjs): nothing the tool could have rewritten stands between
  // the body the harness built and the body it authenticates.
  const seq = nextSeq++;
  const line = '\n' + mac(seq, body) + ' ' + seq + ' ' + body + '\n';
  const total = byteLength(line, 'utf8');
  for (let attempt = 0; attempt < 100; attempt++) {
    try {
      if (writeSync(CHANNEL_FD, line) === total) return;
    } catch (err) {
      if (/** @type {NodeJS.ErrnoException} */ (err).code !== 'EAGAIN') throw err;
      sleepMs(1);
    }
  }
}

/**
 * The JSON text of a frame the harness built: strings, numbers, booleans, arrays and plain objects. Written by hand on
 * purpose: JSON.stringify on an object consults `toJSON` and getters that a tool can add to Object.prototype, which
 * would let it replace a failure with "passed" before the harness MACs it. On primitives the captured stringify
 * consults nothing, and only own properties are read here.
 * @param {any} value what the harness built (strings, numbers, booleans, arrays, plain objects)
 * @returns {string}
 */
function frameJson(value) {
  switch (typeof value) {
    case 'string':
    case 'number':
    case 'boolean':
      return stringify(value);
    case 'object':
      break;
    default:
      return 'null';
  }
  if (value === null) return 'null';
  let out = '';
  if (isArray(value)) {
    for (let i = 0; i < value.length; i++) out += (i === 0 ? '' : ',') + frameJson(value[i]);
    return '[' + out + ']';
  }
  const keys = objectKeys(value);
  for (let i = 0; i < keys.length; i++) {
    const item = value[keys[i]];
    if (item === undefined) continue;
    out += (out === '' ? '' : ',') + stringify(keys[i]) + ':' + frameJson(item);
  }
  return '{' + out + '}';
}

// Before any of the tool's code exists: the parent now knows the run reached this process, so a harness that dies
// without this frame never ran the tool (a pre-started one is then replaced, and the run is not charged for it).
send({ type: 'started' });

/**
 * Reports the one result of this run; later calls (a stray rejection after the result) are ignored. What the tool
 * wrote to stdout/stderr is flushed first, so that output queued before the result is counted against the limit.
 * Callbacks, not promises: a tool may have rewritten Promise.prototype.then by now.
 * @param {Record<string, unknown>} frame
 */
function report(frame) {
  if (reported) return;
  reported = true;
  afterStdioFlushed(() => {
    send({ type: 'result', ...frame });
    clearRepeat(keepAlive);
  });
}

/**
 * Calls `done` once every stdio stream the tool touched has handed its queued writes to the OS (at most 2 s).
 * @param {() => void} done
 */
function afterStdioFlushed(done) {
  let pending = touchedStdio.length + 1;
  /** @type {NodeJS.Timeout | undefined} */
  let timer;
  const settle = () => {
    if (--pending !== 0) return;
    pending = -1;
    if (timer !== undefined) clearTimer(timer);
    done();
  };
  if (touchedStdio.length > 0) {
    timer = setTimer(() => {
      pending = 1;
      settle();
    }, 2000);
  }
  for (let i = 0; i < touchedStdio.length; i++) {
    const stream = touchedStdio[i];
    try {
      // Nothing queued (the usual case) means nothing to wait for: a write callback costs a few ms of latency.
      if (stream.destroyed || !stream.writable || stream.writableLength === 0) settle();
      else stream.write('', settle);
    } catch {
      settle();
    }
  }
  settle();
}

process.on('uncaughtException', (err) => void report(failure('execute', err, 'the tool threw outside execute (in a callback or timer)')));
process.on('unhandledRejection', (reason) => void report(failure('execute', reason, 'the tool left a promise rejection unhandled')));

run().catch((err) => report(failure('execute', err, 'the sandbox harness failed')));

async function run() {
  if (typeof init.uid === 'number') {
    const refused = becomeRunUser(init.uid);
    if (refused) return report({ status: 'crashed', error: refused, diagnostics: { phase: 'process' } });
  }
  let mod;
  try {
    // A bare import from the tool's own directory looks in its node_modules (the project's packages) and nowhere
    // above: the directories above (/dev/shm) are writable by every run, and a node_modules planted there would load
    // one run's code into another that imports a package the project does not have. (CommonJS only: the ES module
    // resolver has no such hook, so a tool that needs ESM, for top-level await or import.meta, still looks above
    // for a package the project lacks.)
    const Module = /** @type {typeof import('node:module') & { _nodeModulePaths(from: string): string[] }} */ (require('node:module'));
    const nodeModulePaths = Module._nodeModulePaths;
    Module._nodeModulePaths = (from) => (from === moduleDir.slice(0, -1) ? [moduleDir + 'node_modules'] : nodeModulePaths(from));
    // tool.cjs when the parent could make it CommonJS (it loads ~7 ms sooner), tool.mjs when it needs ESM.
    mod = isCommonJs ? require(init.modulePath) : await import(pathToFileURL(init.modulePath).href);
  } catch (err) {
    return report(failure('load', err, "the tool's module failed to load"));
  }

  const problem = contractProblem(mod, init.name);
  if (problem) return report({ status: 'invalid', error: problem, diagnostics: { phase: 'contract' } });
  const tool = mod.default ?? mod.tool;
  // Read once: a getter of the tool's could answer differently the second time.
  const declaredTimeout = safe(() => tool.timeoutMs);
  const timeoutMs = typeof declaredTimeout === 'number' && declaredTimeout > 0 ? declaredTimeout : undefined;
  const description = safe(() => tool.description);
  send({
    type: 'ready',
    timeoutMs,
    description: typeof description === 'string' ? description : undefined,
    inputJsonSchemaJson: await inputJsonSchemaJson(tool.inputSchema),
  });

  let parsed;
  try {
    parsed = await (typeof tool.inputSchema.safeParseAsync === 'function'
      ? tool.inputSchema.safeParseAsync(init.input)
      : tool.inputSchema.safeParse(init.input));
  } catch (err) {
    return report(failure('schema', err, "the tool's inputSchema threw while checking the input"));
  }
  if (!parsed || parsed.success !== true) {
    const issues = safe(() => schemaIssues(parsed)) ?? [];
    let summary = '';
    for (let i = 0; i < issues.length; i++) {
      let path = '';
      for (let j = 0; j < issues[i].path.length; j++) path += (j === 0 ? '' : '.') + issues[i].path[j];
      summary += (i === 0 ? ': ' : '; ') + (path || '(input)') + ': ' + issues[i].message;
    }
    return report({
      status: 'invalid',
      error: "the input does not match the tool's inputSchema" + summary,
      diagnostics: { phase: 'schema', schemaIssues: issues },
    });
  }

  const controller = new AbortController();
  if (timeoutMs !== undefined) {
    const abortTimer = setTimer(() => controller.abort(), timeoutMs);
    safe(() => abortTimer.unref()); // the tool's own deadline must not keep a finished process alive
  }
  const threw = (/** @type {unknown} */ err) => report(failure('execute', err, "the tool's execute threw or rejected"));
  let returned;
  try {
    returned = tool.execute(parsed.data, controller.signal);
  } catch (err) {
    return threw(err);
  }
  settled(returned, reportResult, threw);
}

/**
 * Switches this process, for good, to the run's own user (the parent chose it and gave it the run's directory), before
 * any tool code exists: from here on the tool can neither read nor signal Forge's processes, write the project's
 * files, nor reach cgroups or mounts; and the switch makes the process non-dumpable, so its own /proc/self/mem (where
 * the frame key's HMAC states live) is closed to it too. Returns why it could not, or undefined.
 * @param {number} uid
 * @returns {string | undefined}
 */
function becomeRunUser(uid) {
  try {
    // (Always there on Linux, the only platform the sandbox runs on: Node omits them on Windows alone.)
    /** @type {(groups: number[]) => void} */ (process.setgroups)([]);
    /** @type {(id: number) => void} */ (process.setgid)(uid);
    /** @type {(id: number) => void} */ (process.setuid)(uid);
  } catch (err) {
    return `the sandbox could not switch to its own user (uid ${uid}): ${describe(err)}`;
  }
  const nodeModules = moduleDir + 'node_modules';
  for (const [path, what] of [
    [init.modulePath, 'the sandbox directory (FORGE_SANDBOX_TMPDIR and the directories above it need o+x)'],
    [nodeModules, "the project's node_modules (it and the directories above it need o+rx)"],
  ]) {
    try {
      accessSync(path, fsConstants.R_OK);
    } catch (err) {
      return `the sandbox's own user (uid ${uid}) cannot read ${what}: ${describe(err)}; or set FORGE_SANDBOX_UID_BASE=0 to run tools as Forge's own user`;
    }
  }
  return undefined;
}

/**
 * Calls `onValue` or `onError` once, with what `value` settles to, as `await` would; but a native promise is observed
 * through the `then` captured at start-up, because `await` looks `constructor` and `then` up on the promise, where a
 * tool may have rewritten them to turn its own rejection into a resolution.
 * @param {any} value what the tool's execute returned (or a thenable resolved with)
 * @param {(value: unknown) => void} onValue
 * @param {(err: unknown) => void} onError
 */
function settled(value, onValue, onError) {
  if (isPromise(value)) {
    try {
      apply(promiseThen, value, [onValue, onError]);
    } catch (err) {
      onError(err); // its `constructor` (species) threw: the tool broke its own promise
    }
    return;
  }
  let then;
  try {
    then = value !== null && (typeof value === 'object' || typeof value === 'function') ? value.then : undefined;
  } catch (err) {
    return onError(err);
  }
  if (typeof then !== 'function') return onValue(value);
  // Any other thenable settles as it says, once, like a promise resolved with it.
  let called = false;
  const once = (/** @type {(arg: unknown) => void} */ fn) => (/** @type {unknown} */ arg) => {
    if (called) return;
    called = true;
    fn(arg);
  };
  const fail = once(onError);
  try {
    apply(then, value, [once((/** @type {unknown} */ v) => settled(v, onValue, onError)), fail]);
  } catch (err) {
    fail(err);
  }
}

/**
 * Reports what execute resolved with: `passed` when it survives a JSON round trip within the size limit.
 * @param {unknown} result
 */
function reportResult(result) {
  const where = jsonProblem(result);
  if (where) {
    return report({
      status: 'failed',
      error: `the result does not survive a JSON round trip: ${where.path}: ${where.reason}`,
      diagnostics: { phase: 'serialize', resultPath: where.path },
    });
  }
  let json;
  try {
    json = stringify(result);
  } catch (err) {
    return report(failure('serialize', err, 'the result could not be serialised'));
  }
  if (typeof json !== 'string') {
    return report({
      status: 'failed',
      error: 'the result does not survive a JSON round trip: result: it serialises to nothing',
      diagnostics: { phase: 'serialize', resultPath: 'result' },
    });
  }
  const bytes = byteLength(json, 'utf8');
  if (bytes > init.resultBytes) {
    return report({
      status: 'failed',
      error: `the result is ${bytes} bytes of JSON, over the ${init.resultBytes}-byte limit`,
      diagnostics: { phase: 'limits', limit: { kind: 'resultBytes', value: init.resultBytes } },
    });
  }
  report({ status: 'passed', outputJson: json });
}

/**
 * zod's issues, trimmed to what a frame carries: path (strings and numbers) and message, at most 20.
 * @param {any} parsed what the tool's inputSchema returned from safeParse
 * @returns {{ path: (string | number)[], message: string }[]}
 */
function schemaIssues(parsed) {
  const raw = parsed?.error?.issues;
  /** @type {{ path: (string | number)[], message: string }[]} */
  const issues = [];
  if (!isArray(raw)) return issues;
  for (let i = 0; i < raw.length && i < 20; i++) {
    const path = [];
    const rawPath = raw[i]?.path;
    if (isArray(rawPath)) for (let j = 0; j < rawPath.length; j++) path[j] = typeof rawPath[j] === 'number' ? rawPath[j] : toText(rawPath[j]);
    issues[i] = { path, message: clip(toText(raw[i]?.message), 1000) ?? '' };
  }
  return issues;
}

/**
 * The input schema as JSON Schema text, for agents that describe tools to a model. Only for zod 4 schemas, through the
 * zod the tool itself imported (the same module instance, so this costs no load), and never fatal: a schema zod cannot
 * express (a transform, a custom check) simply has none. Text, not an object: frames carry nothing the tool built.
 * @param {any} schema the tool's inputSchema
 * @returns {Promise<string | undefined>}
 */
async function inputJsonSchemaJson(schema) {
  if (!schema || typeof schema !== 'object' || !('_zod' in schema)) return undefined;
  try {
    // The zod the tool itself loaded (require's and import's are two instances; describe() metadata lives in one).
    const zod = isCommonJs ? createRequire(init.modulePath)('zod') : await import('zod');
    const z = zod.z ?? zod.default ?? zod;
    if (typeof z.toJSONSchema !== 'function') return undefined;
    const text = stringify(z.toJSONSchema(schema, { unrepresentable: 'any' }));
    return typeof text === 'string' ? text : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Why the module does not export a tool of TOOL_CONTRACT.md's shape, or undefined when it does.
 * @param {any} mod the tool's module namespace (or module.exports)
 * @param {string} expectedName
 * @returns {string | undefined}
 */
function contractProblem(mod, expectedName) {
  const tool = mod.default ?? mod.tool;
  if (tool === undefined || tool === null) {
    return 'the module exports no tool: export it as the default export or as a named export `tool`';
  }
  if (typeof tool !== 'object') return `the exported tool is a ${typeof tool}, not an object`;
  try {
    if (tool.name !== expectedName) {
      return `the tool's name is ${stringify(tool.name)} but it is deployed as ${stringify(expectedName)}: set the module's \`name\` to ${stringify(expectedName)}`;
    }
    if (tool.description !== undefined && typeof tool.description !== 'string') return '`description` must be a string';
    if (!tool.inputSchema || (typeof tool.inputSchema.safeParse !== 'function' && typeof tool.inputSchema.safeParseAsync !== 'function')) {
      return '`inputSchema` must be a zod schema (an object with safeParse)';
    }
    if (typeof tool.execute !== 'function') return '`execute` must be a function (input, signal) => result';
    if (tool.timeoutMs !== undefined && !(typeof tool.timeoutMs === 'number' && tool.timeoutMs > 0)) {
      return '`timeoutMs` must be a positive number of milliseconds';
    }
  } catch (err) {
    return `reading the exported tool threw: ${describe(err)}`;
  }
  return undefined;
}

/**
 * A result frame for something the tool threw (`what` is the sentence's subject and verb, e.g. "the tool's execute
 * threw or rejected"); V8's allocation failures are the memory limit, not the tool's bug. Every text is clipped and
 * read defensively: the error is the tool's object, with the tool's getters.
 * @param {string} phase
 * @param {any} err whatever the tool threw
 * @param {string} what
 */
function failure(phase, err, what) {
  const isOom = safe(() => getPrototypeOf(err) === rangeErrorPrototype && apply(regExpTest, OOM_MESSAGE, [err.message])) === true;
  /** @type {{ status: string, error: string, diagnostics: { phase: string, errorName?: string, stack?: string } }} */
  const frame = {
    status: isOom ? 'oom' : 'failed',
    error: isOom ? `the tool ran out of memory: ${describe(err)}` : `${what}: ${describe(err)}`,
    diagnostics: { phase: isOom ? 'limits' : phase },
  };
  if (safe(() => err instanceof Error)) {
    frame.diagnostics.errorName = clip(
      safe(() => toText(err.name)),
      200,
    );
    // The harness's own frames say nothing to the tool's author, nor does the run's private directory: `tool.ts:3:9`.
    frame.diagnostics.stack = clip(
      safe(() =>
        toText(err.stack ?? '')
          .split('\n')
          .filter((line) => !line.includes('harness.cjs'))
          .join('\n')
          .split('file://' + moduleDir)
          .join('')
          .split(moduleDir)
          .join(''),
      ),
      4000,
    );
  }
  return frame;
}

/**
 * A one-line description of any thrown value, even one whose toString throws; at most 8000 characters.
 * @param {unknown} value
 * @returns {string}
 */
function describe(value) {
  const text = safe(() => {
    if (value instanceof Error) return `${value.name}: ${value.message}`;
    if (value === undefined) return 'undefined (a rejection without a reason)';
    if (typeof value === 'string') return value;
    return `${typeof value} ${stringify(value) ?? toText(value)}`;
  });
  return clip(text, 8000) ?? 'a value that cannot be described';
}

/**
 * `value` when it is a string (cut to `max` characters), else undefined; no method of the tool's is consulted.
 * @param {unknown} value
 * @param {number} max
 * @returns {string | undefined}
 */
function clip(value, max) {
  if (typeof value !== 'string') return undefined;
  return value.length > max ? apply(stringSlice, value, [0, max]) + '…' : value;
}

/**
 * What `fn` returns, or undefined when it throws.
 * @template T
 * @param {() => T} fn
 * @returns {T | undefined}
 */
function safe(fn) {
  try {
    return fn();
  } catch {
    return undefined;
  }
}

/**
 * Where the value would not survive JSON.stringify → JSON.parse unchanged, as `{path, reason}`, or undefined.
 * Stricter than JSON.stringify on purpose: it silently drops functions and undefined and turns NaN into null, which
 * would hand the agent something other than what the tool returned.
 * @param {unknown} value
 * @returns {{ path: string, reason: string } | undefined}
 */
function jsonProblem(value) {
  // The ancestors of the value being walked (a circular reference points back at one): an array walked by index, since
  // Set's methods are the tool's to rewrite by now, as are Object.keys and the rest (captured above).
  /** @type {unknown[]} */
  const onPath = [];
  /**
   * @param {any} v
   * @param {string} path
   * @param {number} depth
   * @returns {{ path: string, reason: string } | undefined}
   */
  function walk(v, path, depth) {
    if (depth > 512) return { path, reason: 'nested deeper than 512 levels' };
    switch (typeof v) {
      case 'string':
      case 'boolean':
        return undefined;
      case 'number':
        return isFiniteNumber(v) ? undefined : { path, reason: `${v} is not a JSON number` };
      case 'bigint':
        return { path, reason: 'a BigInt is not JSON (return it as a string)' };
      case 'function':
        return { path, reason: 'a function is not JSON' };
      case 'symbol':
        return { path, reason: 'a symbol is not JSON' };
      case 'undefined':
        return { path, reason: 'undefined is not JSON (use null, or leave the key out)' };
    }
    if (v === null) return undefined;
    for (let i = 0; i < depth; i++) if (onPath[i] === v) return { path, reason: 'a circular reference' };
    const proto = getPrototypeOf(v);
    const array = isArray(v);
    if (!array && proto !== objectPrototype && proto !== null) {
      const kind = safe(() => v.constructor?.name) ?? 'object';
      return { path, reason: `a ${kind} is not plain JSON (convert it to an object, array, string or number)` };
    }
    onPath[depth] = v;
    if (array) {
      for (let i = 0; i < v.length; i++) {
        const p = walk(v[i], `${path}[${i}]`, depth + 1);
        if (p) return p;
      }
    } else {
      const keys = objectKeys(v);
      for (let i = 0; i < keys.length; i++) {
        const p = walk(v[keys[i]], `${path}.${keys[i]}`, depth + 1);
        if (p) return p;
      }
    }
    return undefined;
  }
  try {
    return walk(value, 'result', 0);
  } catch (err) {
    return { path: 'result', reason: `reading it threw: ${describe(err)}` };
  }
}

/**
 * Reads the run from fd 3, synchronously, before any tool code exists: the 32-byte frame key (kept as bytes: a string
 * would sit in the JS heap, where a heap snapshot could find it), then one line of JSON.
 */
function readRun() {
  const chunks = [];
  let have = 0;
  const buf = Buffer.alloc(64 * 1024);
  for (;;) {
    let n;
    try {
      n = readSync(CHANNEL_FD, buf, 0, buf.length, null);
    } catch (err) {
      if (/** @type {NodeJS.ErrnoException} */ (err).code === 'EAGAIN') {
        sleepMs(1);
        continue;
      }
      throw err;
    }
    if (n === 0) throw new Error('the sandbox parent closed the channel before sending the run');
    chunks.push(Buffer.from(buf.subarray(0, n)));
    have += n;
    if (have <= 32) continue;
    const all = Buffer.concat(chunks);
    const nl = all.indexOf(10, 32);
    if (nl < 0) continue;
    const key = new Uint8Array(32);
    key.set(all.subarray(0, 32));
    all.fill(0, 0, 32);
    buf.fill(0);
    for (const chunk of chunks) chunk.fill(0);
    return { key, init: JSON.parse(all.subarray(32, nl).toString('utf8')) };
  }
}

/** @param {number} ms */
function sleepMs(ms) {
  atomicsWait(sleepCell, 0, 0, ms);
}
