#!/usr/bin/env node
'use strict';
/**
 * `npm test` and `npm run test:long` (docs/testing.md). `npm test`: the setup step (temporal CLI), the build, then
 * lint beside jest on the quick set, every test file that test/long-suites.json does not list; `npm run test:long`
 * (`--long`): the setup step, the build, then jest on the long set. Arguments after `--` go to jest.
 *
 * Lint runs beside jest at the lowest CPU priority (`npm run lint -- --background`). Both are CPU-bound, but jest
 * leaves part of two cores idle while its tests wait on servers, processes and timers, and lint's ~130 s of CPU goes
 * there instead of taking a minute of wall before the first test. Jest slows by part of that, not all: BENCHMARKS.md
 * has the clean-clone runs. A lint failure still fails the run, after jest ends; setup and build stop it at once, as
 * `a && b` would.
 *
 * It ends, pass or fail, with its whole wall time on one line CI's log keeps: `npm_test_wall_s=<s>`
 * (`npm_test_long_wall_s=<s>` for the long set) and each step's share. The goal for `npm test` is under 12 minutes on
 * the project's 2-core machine (issue 28).
 */
const { spawn } = require('node:child_process');
const { readFileSync } = require('node:fs');
const os = require('node:os');
const { performance } = require('node:perf_hooks');

const args = process.argv.slice(2);
const long = args[0] === '--long';
const jestArgs = long ? args.slice(1) : args;
const set = long ? 'long' : 'quick';
const figure = long ? 'npm_test_long_wall_s' : 'npm_test_wall_s';
const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';

/** Each entry runs after the one before has passed; the steps of one entry run side by side. */
const stages = [
  [['setup', ['run', 'setup', '--silent']]],
  [['build', ['run', 'build', '--silent']]],
  [...(long ? [] : [['lint', ['run', 'lint', '--', '--background']]]), ['jest', ['run', 'jest', '--silent', '--', ...jestArgs]]],
];

const started = performance.now();
const took = [];

main().then((status) => {
  const cpu = childrenCpuSeconds();
  const cpuNote =
    cpu === undefined ? '' : `; CPU ${cpu} s over all processes, so ${Math.round(cpu / os.cpus().length)} s of wall at best on ${os.cpus().length} cores`;
  process.stdout.write(`${figure}=${seconds(performance.now() - started)} (${took.join(', ')}${cpuNote}; FORGE_TEST_SET=${set})\n`);
  process.exit(status);
});

async function main() {
  for (const stage of stages) {
    const slots = stage.map(() => took.push('') - 1);
    const codes = await Promise.all(stage.map(([name, npmArgs], i) => step(name, npmArgs, slots[i])));
    const failed = codes.find((code) => code !== 0);
    if (failed !== undefined) return failed;
  }
  return 0;
}

/** Runs one step to its end; records its wall time (and how it failed) in took[slot]; resolves to its exit code. */
function step(name, npmArgs, slot) {
  const t0 = performance.now();
  return new Promise((resolve) => {
    const child = spawn(npm, npmArgs, { stdio: 'inherit', env: { ...process.env, FORGE_TEST_SET: set } });
    child.once('error', (err) => process.stderr.write(`${name}: ${err.message}\n`));
    child.once('close', (code, signal) => {
      const status = code ?? 1;
      took[slot] = `${name} ${seconds(performance.now() - t0)} s${status !== 0 ? ` (failed, exit ${status}${signal ? `, ${signal}` : ''})` : ''}`;
      resolve(status);
    });
  });
}

/**
 * The CPU time (user + system) of every process the steps started and waited for, from /proc (Linux): the figure
 * that does not grow when other work shares the cores, beside the wall time that does. Undefined elsewhere.
 */
function childrenCpuSeconds() {
  try {
    // Fields after the command name (which may hold spaces): cutime and cstime are the 14th and 15th, in clock ticks (USER_HZ, 100 on Linux).
    const stat = readFileSync('/proc/self/stat', 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return Math.round((Number(fields[13]) + Number(fields[14])) / 100);
  } catch {
    return undefined;
  }
}

function seconds(ms) {
  return Math.round(ms / 100) / 10;
}
