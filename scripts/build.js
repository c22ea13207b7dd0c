#!/usr/bin/env node
'use strict';
/**
 * `npm run build` (and so `npm start`, `npm test`, `npm run bench`, and `prepare`, which npm runs after a plain
 * `npm install` here and when it installs Forge from a git URL): compiles TypeScript into dist/ and bundles the
 * workflows (scripts/bundle-workflows.js), each only when its inputs changed since the last build, and says which it
 * is doing. A full compile takes about a minute on two cores and the bundle ten seconds or so; an unchanged tree takes
 * a fraction of a second, so a second `npm start` is not a minute of silence.
 *
 * What counts as changed is content, not time: the hashes of the files tsc reads (src/, bench/, the tsconfigs, the
 * installed packages through node_modules/.package-lock.json) and of the files the workflow bundle is made of, kept
 * in dist/.build-state.json. tsc itself is incremental (tsconfig.build.json's tsBuildInfoFile, dist/.tsbuildinfo), so
 * a change recompiles what it affects rather than everything. Removing dist/ (as `prepack` does) starts over.
 *
 * `--force` rebuilds both regardless. Exits with tsc's or the bundler's failure; the state is written only after a
 * step succeeded, so a failed build is retried in full next time.
 */

const { spawnSync } = require('node:child_process');
const { createHash } = require('node:crypto');
const fs = require('node:fs');
const path = require('node:path');
const { performance } = require('node:perf_hooks');

const ROOT = path.resolve(__dirname, '..');
const DIST = path.join(ROOT, 'dist');
const STATE_FILE = path.join(DIST, '.build-state.json');
const TSBUILDINFO = path.join(DIST, '.tsbuildinfo');
const BUNDLE = path.join(DIST, 'src', 'workflow-bundle.js');
const WORKFLOWS_ENTRY = path.join(DIST, 'src', 'workflows', 'index.js');

/** What tsc reads besides the sources: a change here can change every output. */
const CONFIG_INPUTS = ['tsconfig.json', 'tsconfig.build.json', 'node_modules/.package-lock.json'];
/** The source trees tsconfig.build.json includes. */
const SOURCE_DIRS = ['src', 'bench'];
const SOURCE_FILE = /\.(ts|mts|cts|json)$/;

function log(line) {
  process.stderr.write(`[build] ${line}\n`);
}

function hashFile(file) {
  try {
    return createHash('sha256').update(fs.readFileSync(file)).digest('hex').slice(0, 16);
  } catch {
    return 'missing';
  }
}

function walk(dir, into) {
  let entries;
  try {
    entries = fs.readdirSync(dir, { withFileTypes: true });
  } catch {
    return into;
  }
  for (const entry of entries) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) walk(full, into);
    else if (entry.isFile() && SOURCE_FILE.test(entry.name)) into.push(full);
  }
  return into;
}

/** Every input of the TypeScript compile, by path relative to the root, with its content hash. */
function compileInputs() {
  const files = {};
  for (const rel of CONFIG_INPUTS) files[rel] = hashFile(path.join(ROOT, rel));
  for (const dir of SOURCE_DIRS) {
    for (const file of walk(path.join(ROOT, dir), [])) files[path.relative(ROOT, file)] = hashFile(file);
  }
  return files;
}

/** Where tsc writes a source's JavaScript. */
function outputOf(rel) {
  return path.join(
    DIST,
    rel
      .replace(/\.ts$/, '.js')
      .replace(/\.mts$/, '.mjs')
      .replace(/\.cts$/, '.cjs'),
  );
}

/**
 * The compiled .js files of the last build that are missing from dist/. tsc's incremental state does not notice
 * outputs that disappeared behind its back (a partly removed dist/), so their presence is checked here. A source new
 * since then has no output yet, which is no reason to emit everything again: tsc compiles it as a change (and a source
 * removed since then needs no output).
 */
function missingOutputs(previous, inputs) {
  return Object.keys(previous ?? {}).filter(
    (rel) =>
      rel in inputs &&
      /\.(ts|mts|cts)$/.test(rel) &&
      !/\.d\.[mc]?ts$/.test(rel) &&
      SOURCE_DIRS.some((d) => rel.startsWith(d + path.sep)) &&
      !fs.existsSync(outputOf(rel)),
  );
}

/**
 * The files the workflow bundle is made of: the compiled workflows and everything they require, followed through
 * relative require() calls, and the packages they require by name at their installed versions (webpack bundles those
 * too). A content hash of all that, and of the bundling script, says whether the bundle is current.
 */
function bundleFingerprint() {
  const hash = createHash('sha256');
  hash.update(fs.readFileSync(path.join(__dirname, 'bundle-workflows.js')));
  const seen = new Set();
  const packages = new Set();
  const queue = [WORKFLOWS_ENTRY];
  while (queue.length > 0) {
    const file = queue.pop();
    if (seen.has(file)) continue;
    seen.add(file);
    const text = fs.readFileSync(file, 'utf8');
    hash.update(`${path.relative(ROOT, file)}\0${text}\0`);
    for (const m of text.matchAll(/\brequire\(\s*["']([^"']+)["']\s*\)/g)) {
      const spec = m[1];
      if (spec.startsWith('.')) {
        queue.push(require.resolve(path.resolve(path.dirname(file), spec)));
      } else if (!spec.startsWith('node:')) {
        packages.add(spec.startsWith('@') ? spec.split('/').slice(0, 2).join('/') : spec.split('/')[0]);
      }
    }
  }
  for (const name of [...packages].sort()) {
    let version = 'unresolved';
    try {
      version = require(require.resolve(`${name}/package.json`, { paths: [ROOT] })).version;
    } catch {
      // a package without an exported package.json: its name alone
    }
    hash.update(`${name}@${version}\0`);
  }
  return { hash: hash.digest('hex').slice(0, 16), files: seen.size };
}

function readState() {
  try {
    return JSON.parse(fs.readFileSync(STATE_FILE, 'utf8'));
  } catch {
    return {};
  }
}

function writeState(state) {
  fs.mkdirSync(DIST, { recursive: true });
  fs.writeFileSync(STATE_FILE, `${JSON.stringify(state, null, 1)}\n`);
}

function seconds(since) {
  return `${((performance.now() - since) / 1000).toFixed(1)} s`;
}

/** The inputs that differ between two builds' hashes (removed ones marked so). */
function changedInputs(before, now) {
  const changed = Object.keys(now).filter((rel) => before[rel] !== now[rel]);
  const removed = Object.keys(before).filter((rel) => !(rel in now));
  return [...changed, ...removed.map((rel) => `${rel} (removed)`)];
}

function describeChanges(changed) {
  const shown = changed.slice(0, 3).join(', ');
  return `${changed.length} file(s) changed since the last build: ${shown}${changed.length > 3 ? `, +${changed.length - 3} more` : ''}`;
}

function main() {
  const force = process.argv.includes('--force');
  const state = readState();
  const inputs = compileInputs();
  const previous = state.compile && state.compile.files;
  const missing = missingOutputs(previous, inputs);
  let compiled = false;
  const changed = previous ? changedInputs(previous, inputs) : [];
  const upToDate = !force && previous !== undefined && missing.length === 0 && changed.length === 0;
  if (!upToDate) {
    let why;
    if (force) why = '--force';
    else if (!previous) why = 'first build: about a minute on two cores';
    else if (missing.length > 0) why = `${missing.length} compiled file(s) missing from dist/, e.g. ${path.relative(ROOT, outputOf(missing[0]))}`;
    else why = describeChanges(changed);
    if (force || missing.length > 0) fs.rmSync(TSBUILDINFO, { force: true }); // everything emitted again
    log(`compiling TypeScript into dist/ (${why}) ...`);
    const started = performance.now();
    const tsc = spawnSync(process.execPath, [require.resolve('typescript/bin/tsc', { paths: [ROOT] }), '-p', 'tsconfig.build.json'], {
      cwd: ROOT,
      stdio: 'inherit',
    });
    if (tsc.status !== 0) {
      log(`tsc failed (exit ${tsc.status ?? tsc.signal}); dist/ may be partly updated, the next build compiles again`);
      delete state.compile;
      writeState(state);
      return 1;
    }
    state.compile = { files: inputs };
    writeState(state);
    compiled = true;
    log(`compiled in ${seconds(started)}`);
  }

  const bundle = bundleFingerprint();
  const bundleCurrent = !force && state.bundle && state.bundle.hash === bundle.hash && fs.existsSync(BUNDLE);
  if (!bundleCurrent) {
    log(
      `bundling the workflows into dist/src/workflow-bundle.js (${state.bundle ? 'their code changed' : fs.existsSync(BUNDLE) ? 'no record of what the bundle was made from' : 'no bundle yet'}) ...`,
    );
    const started = performance.now();
    const bundled = spawnSync(process.execPath, [path.join(__dirname, 'bundle-workflows.js')], { cwd: ROOT, stdio: 'inherit' });
    if (bundled.status !== 0) {
      delete state.bundle;
      writeState(state);
      return 1;
    }
    state.bundle = { hash: bundle.hash };
    writeState(state);
    log(`bundled in ${seconds(started)}`);
  }
  if (!compiled && bundleCurrent) {
    log(
      `dist/ is up to date: ${Object.keys(inputs).length} source files and the ${bundle.files} compiled files of the workflow bundle unchanged since the last build`,
    );
  }
  return 0;
}

if (require.main === module) {
  process.exitCode = main();
}
