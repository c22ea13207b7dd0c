// @ts-check
/**
 * The script a harness startup snapshot is built from (src/sandbox/harness-snapshot.ts):
 *
 *   node <the harness's V8 flags> --snapshot-blob BLOB --build-snapshot harness-snapshot-entry.cjs HARNESS ENTRY...
 *
 * It loads each ENTRY (a package's CommonJS entry file) and every file that entry requires inside its package, then
 * leaves Node to serialise the heap. A sandbox process started with `--snapshot-blob BLOB` begins with those modules
 * already evaluated: instead of reading, compiling and running zod's ~100 files (~60-80 ms of CPU every run), it
 * deserialises them. The main function below then puts each of them into Node's CommonJS cache under its real path,
 * exactly where the tool's `require('zod')` (or `require('zod/v4')`, whose inner files are the same ones) looks, and
 * runs the harness as the main module with the arguments the process got, as `node harness.cjs ARGS...` would.
 *
 * Nothing of the harness's own is in the snapshot: it starts afresh in every process, captures its intrinsics and
 * reads its run's key at run time. The packages' code ran here before any tool's existed, as a spare's preload does.
 * While a snapshot is built, Node allows `require` of built-in modules only: the packages' files are compiled here with
 * vm.compileFunction under their real file names (their stack traces read as usual), and a package that requires
 * another package fails the build (the pool then boots its spares the usual way).
 *
 * `node --snapshot-blob BLOB forge-snapshot-check` prints how many modules the snapshot holds and exits: how Forge
 * checks a new blob before it uses it.
 */
'use strict';
const { readFileSync, realpathSync, statSync } = require('node:fs');
const path = require('node:path');
const vm = require('node:vm');
const v8 = require('node:v8');

const [harness, ...entries] = process.argv.slice(2);
if (!harness) throw new Error('usage: --build-snapshot harness-snapshot-entry.cjs HARNESS ENTRY...');

/** @type {Map<string, { filename: string, exports: unknown }>} */
const loaded = new Map();

/** @param {string} file */
function isFile(file) {
  try {
    return statSync(file).isFile();
  } catch {
    return false;
  }
}

/**
 * A relative require's file, as Node's CommonJS resolution finds it (exact name, then .js, .cjs, .json, then the
 * directory's index), real path.
 * @param {string} dir
 * @param {string} request
 */
function resolveRelative(dir, request) {
  const base = path.resolve(dir, request);
  for (const file of [base, `${base}.js`, `${base}.cjs`, `${base}.json`, path.join(base, 'index.js'), path.join(base, 'index.cjs')]) {
    if (isFile(file)) return realpathSync(file);
  }
  throw new Error(`cannot resolve ${request} from ${dir}`);
}

/** @param {string} filename a real path */
function load(filename) {
  const known = loaded.get(filename);
  if (known) return known.exports;
  /** @type {{ filename: string, exports: any }} */
  const mod = { filename, exports: {} };
  loaded.set(filename, mod);
  const text = readFileSync(filename, 'utf8');
  if (filename.endsWith('.json')) {
    mod.exports = JSON.parse(text);
    return mod.exports;
  }
  const dir = path.dirname(filename);
  const run = vm.compileFunction(text, ['exports', 'require', 'module', '__filename', '__dirname'], { filename });
  // Built-ins come from Node; another package would need its resolution, which a snapshot's build does not have.
  /** @param {string} request */
  const requireHere = (request) => (request.startsWith('.') ? load(resolveRelative(dir, request)) : require(request));
  run.call(mod.exports, mod.exports, requireHere, mod, filename, dir);
  return mod.exports;
}

for (const entry of entries) load(realpathSync(entry));

v8.startupSnapshot.setDeserializeMainFunction(() => {
  const Module = require('node:module');
  if (process.argv[1] === 'forge-snapshot-check') {
    process.stdout.write(`${loaded.size}\n`);
    return;
  }
  // What a require of each file would have left in the cache, had it been loaded in this process.
  const cache = /** @type {Record<string, unknown>} */ (/** @type {any} */ (Module)._cache);
  for (const { filename, exports } of loaded.values()) {
    const mod = new Module(filename);
    mod.filename = filename;
    mod.paths = /** @type {any} */ (Module)._nodeModulePaths(path.dirname(filename));
    mod.exports = exports;
    mod.loaded = true;
    cache[filename] = mod;
  }
  process.argv.splice(1, 0, harness);
  /** @type {any} */ (Module).runMain();
});
