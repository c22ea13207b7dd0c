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
 * - The harness's only channel to the parent is fd 3. Its first act is to read, synchronously and before the tool's
 *   module is even imported, one line from the parent holding a per-run 256-bit secret. From then on the secret lives
 *   only in this module's closure: not in argv, the environment, a file or anything else the tool can read through an
 *   API. Every frame the harness sends carries it; the parent drops every frame whose secret does not match (a tool
 *   can write to fd 3, but only without the secret), and it takes the first genuine result only.
 * - A tool that throws after printing or sending a fake "passed" therefore still ends `failed`: the harness reports
 *   the throw, and the fake frame never counted. A tool that kills or exits the process before the harness reports
 *   ends `crashed`, because a process that ends without a genuine result is never `passed`.
 * - What stays outside this guarantee: code that reads the harness's own memory (node:inspector on the main thread,
 *   /proc/self/mem). That is arbitrary native-level access, which only an OS-level boundary (a separate user or VM)
 *   would stop; DESIGN.md's threat model is a buggy or careless agent, not a kernel exploit.
 */
'use strict';
// CommonJS, not an ES module: Node starts a CommonJS entry ~3 ms sooner (the ESM loader initialises only when the
// tool's module is imported), and every sandbox run pays that.
const { readSync, writeSync } = require('node:fs');
const { pathToFileURL } = require('node:url');

const CHANNEL_FD = 3;

// Keeps the event loop alive until the parent has our result: a never-settling promise or a hanging top-level await
// must end as `timeout` (the parent's clock), not as a silent exit with nothing pending.
const keepAlive = setInterval(() => {}, 2 ** 30);

// process.stdout/stderr are created lazily, and creating one costs milliseconds: note which ones the tool touched, so
// that the flush before reporting waits only for streams that exist.
const touchedStdio = [];
for (const name of ['stdout', 'stderr']) {
  const original = Object.getOwnPropertyDescriptor(process, name);
  if (!original?.get || !original.configurable) continue;
  Object.defineProperty(process, name, {
    configurable: true,
    enumerable: original.enumerable,
    get() {
      const stream = original.get.call(process);
      if (!touchedStdio.includes(stream)) touchedStdio.push(stream);
      return stream;
    },
  });
}

const init = readInitLine();
const secret = String(init.secret);
let reported = false;

/** Sends one authenticated frame to the parent; synchronous so no tool code can run between decision and report. */
function send(frame) {
  const bytes = Buffer.from(JSON.stringify({ ...frame, secret }) + '\n', 'utf8');
  let offset = 0;
  while (offset < bytes.length) {
    try {
      offset += writeSync(CHANNEL_FD, bytes, offset, bytes.length - offset);
    } catch (err) {
      if (/** @type {NodeJS.ErrnoException} */ (err).code !== 'EAGAIN') throw err;
      sleepMs(1);
    }
  }
}

// Before any of the tool's code exists: the parent now knows the run reached this process, so a harness that dies
// without this frame never ran the tool (a pre-started one is then replaced, and the run is not charged for it).
send({ type: 'started' });

/**
 * Reports the one result of this run; later calls (a stray rejection after the result) are ignored. What the tool
 * wrote to stdout/stderr is flushed first, so that output queued before the result is counted against the limit.
 */
async function report(frame) {
  if (reported) return;
  reported = true;
  await flushStdio();
  send({ type: 'result', ...frame });
  clearInterval(keepAlive);
}

function flushStdio() {
  if (touchedStdio.length === 0) return Promise.resolve();
  const flushed = touchedStdio.map(
    (stream) =>
      new Promise((resolve) => {
        try {
          // Nothing queued (the usual case) means nothing to wait for: a write callback costs a few ms of latency.
          if (stream.destroyed || !stream.writable || stream.writableLength === 0) return resolve(undefined);
          stream.write('', () => resolve(undefined));
        } catch {
          resolve(undefined);
        }
      }),
  );
  return Promise.race([Promise.all(flushed), new Promise((resolve) => setTimeout(resolve, 2000))]);
}

process.on('uncaughtException', (err) => void report(failure('execute', err, 'the tool threw outside execute (in a callback or timer)')));
process.on('unhandledRejection', (reason) => void report(failure('execute', reason, 'the tool left a promise rejection unhandled')));

run().catch((err) => report(failure('execute', err, 'the sandbox harness failed')));

async function run() {
  let mod;
  try {
    mod = await import(pathToFileURL(init.modulePath).href);
  } catch (err) {
    return report(failure('load', err, "the tool's module failed to load"));
  }

  const problem = contractProblem(mod, init.name);
  if (problem) return report({ status: 'invalid', error: problem, diagnostics: { phase: 'contract' } });
  const tool = mod.default ?? mod.tool;
  const timeoutMs = typeof tool.timeoutMs === 'number' ? tool.timeoutMs : undefined;
  send({
    type: 'ready',
    timeoutMs,
    description: typeof tool.description === 'string' ? tool.description : undefined,
    inputJsonSchema: await inputJsonSchema(tool.inputSchema),
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
    const issues = (parsed?.error?.issues ?? []).slice(0, 20).map((i) => ({
      path: Array.isArray(i.path) ? i.path.map((p) => (typeof p === 'number' ? p : String(p))) : [],
      message: String(i.message),
    }));
    const summary = issues.map((i) => `${i.path.join('.') || '(input)'}: ${i.message}`).join('; ');
    return report({
      status: 'invalid',
      error: `the input does not match the tool's inputSchema${summary ? `: ${summary}` : ''}`,
      diagnostics: { phase: 'schema', schemaIssues: issues },
    });
  }

  const controller = new AbortController();
  if (timeoutMs !== undefined && timeoutMs > 0) setTimeout(() => controller.abort(), timeoutMs).unref();
  let result;
  try {
    result = await tool.execute(parsed.data, controller.signal);
  } catch (err) {
    return report(failure('execute', err, "the tool's execute threw or rejected"));
  }

  const where = jsonProblem(result);
  if (where) {
    return report({
      status: 'failed',
      error: `the result does not survive a JSON round trip: ${where.path}: ${where.reason}`,
      diagnostics: { phase: 'serialize', resultPath: where.path },
    });
  }
  const json = JSON.stringify(result);
  const bytes = Buffer.byteLength(json, 'utf8');
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
 * The input schema as JSON Schema, for agents that describe tools to a model. Only for zod 4 schemas, through the
 * zod the tool itself imported (the same module instance, so this costs no load), and never fatal: a schema zod cannot
 * express (a transform, a custom check) simply has none.
 */
async function inputJsonSchema(schema) {
  if (!schema || typeof schema !== 'object' || !('_zod' in schema)) return undefined;
  try {
    const zod = await import('zod');
    const z = zod.z ?? zod.default ?? zod;
    return typeof z.toJSONSchema === 'function' ? z.toJSONSchema(schema, { unrepresentable: 'any' }) : undefined;
  } catch {
    return undefined;
  }
}

/** Why the module does not export a tool of TOOL_CONTRACT.md's shape, or undefined when it does. */
function contractProblem(mod, expectedName) {
  const tool = mod.default ?? mod.tool;
  if (tool === undefined || tool === null) {
    return 'the module exports no tool: export it as the default export or as a named export `tool`';
  }
  if (typeof tool !== 'object') return `the exported tool is a ${typeof tool}, not an object`;
  try {
    if (tool.name !== expectedName) {
      return `the tool's name is ${JSON.stringify(tool.name)} but it is deployed as ${JSON.stringify(expectedName)}: make them equal`;
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

/** A result frame for something the tool threw; allocation failures are the memory limit, not the tool's bug. */
/** `what` is the sentence's subject and verb, e.g. "the tool's execute threw or rejected". */
function failure(phase, err, what) {
  const isOom = err instanceof RangeError && /allocation failed|out of memory/i.test(String(err.message));
  const frame = {
    status: isOom ? 'oom' : 'failed',
    error: isOom ? `the tool ran out of memory: ${describe(err)}` : `${what}: ${describe(err)}`,
    diagnostics: { phase: isOom ? 'limits' : phase },
  };
  if (err instanceof Error) {
    frame.diagnostics.errorName = safe(() => String(err.name));
    // The harness's own frames say nothing to the tool's author.
    frame.diagnostics.stack = safe(() =>
      String(err.stack ?? '')
        .split('\n')
        .filter((line) => !line.includes('harness.cjs'))
        .join('\n')
        .slice(0, 4000),
    );
  }
  return frame;
}

/** A one-line description of any thrown value, even one whose toString throws. */
function describe(value) {
  return (
    safe(() => {
      if (value instanceof Error) return `${value.name}: ${value.message}`;
      if (value === undefined) return 'undefined (a rejection without a reason)';
      if (typeof value === 'string') return value;
      return `${typeof value} ${JSON.stringify(value) ?? String(value)}`;
    }) ?? 'a value that cannot be described'
  );
}

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
 */
function jsonProblem(value) {
  const stack = new Set();
  function walk(v, path, depth) {
    if (depth > 512) return { path, reason: 'nested deeper than 512 levels' };
    switch (typeof v) {
      case 'string':
      case 'boolean':
        return undefined;
      case 'number':
        return Number.isFinite(v) ? undefined : { path, reason: `${v} is not a JSON number` };
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
    if (stack.has(v)) return { path, reason: 'a circular reference' };
    const proto = Object.getPrototypeOf(v);
    if (!Array.isArray(v) && proto !== Object.prototype && proto !== null) {
      const kind = safe(() => v.constructor?.name) ?? 'object';
      return { path, reason: `a ${kind} is not plain JSON (convert it to an object, array, string or number)` };
    }
    stack.add(v);
    try {
      if (Array.isArray(v)) {
        for (let i = 0; i < v.length; i++) {
          const p = walk(v[i], `${path}[${i}]`, depth + 1);
          if (p) return p;
        }
      } else {
        for (const key of Object.keys(v)) {
          const p = walk(v[key], `${path}.${key}`, depth + 1);
          if (p) return p;
        }
      }
    } finally {
      stack.delete(v);
    }
    return undefined;
  }
  try {
    return walk(value, 'result', 0);
  } catch (err) {
    return { path: 'result', reason: `reading it threw: ${describe(err)}` };
  }
}

/** Reads the parent's one init line from fd 3, synchronously: no tool code exists yet to observe it. */
function readInitLine() {
  const chunks = [];
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
    const chunk = Buffer.from(buf.subarray(0, n));
    const nl = chunk.indexOf(10);
    if (nl >= 0) {
      chunks.push(chunk.subarray(0, nl));
      return JSON.parse(Buffer.concat(chunks).toString('utf8'));
    }
    chunks.push(chunk);
  }
}

function sleepMs(ms) {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}
