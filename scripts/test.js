#!/usr/bin/env node
'use strict';
/**
 * `npm test` and `npm run test:long` (docs/testing.md). `npm test`: the setup step (temporal CLI), the build, lint,
 * then jest on the quick set, every test file that test/long-suites.json does not list; `npm run test:long`
 * (`--long`): the setup step, the build, then jest on the long set. Arguments after `--` go to jest.
 *
 * Each stops at the first step that fails, as `a && b && c` would, and ends, pass or fail, with its whole wall time
 * on one line CI's log keeps: `npm_test_wall_s=<s>` (`npm_test_long_wall_s=<s>` for the long set) and each step's
 * share. The goal for `npm test` is under 12 minutes on the project's 2-core machine (issue 28).
 */
const { spawnSync } = require('node:child_process');
const { readFileSync } = require('node:fs');
const os = require('node:os');
const { performance } = require('node:perf_hooks');

const args = process.argv.slice(2);
const long = args[0] === '--long';
const jestArgs = long ? args.slice(1) : args;
const set = long ? 'long' : 'quick';
const figure = long ? 'npm_test_long_wall_s' : 'npm_test_wall_s';
const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';

const steps = [
  ['setup', ['run', 'setup', '--silent']],
  ['build', ['run', 'build', '--silent']],
  ...(long ? [] : [['lint', ['run', 'lint']]]),
  ['jest', ['run', 'jest', '--silent', '--', ...jestArgs]],
];

const started = performance.now();
const took = [];
let status = 0;
for (const [name, npmArgs] of steps) {
  const t0 = performance.now();
  const res = spawnSync(npm, npmArgs, { stdio: 'inherit', env: { ...process.env, FORGE_TEST_SET: set } });
  took.push(`${name} ${seconds(performance.now() - t0)} s`);
  status = res.status ?? 1;
  if (res.error) process.stderr.write(`${name}: ${res.error.message}\n`);
  if (status !== 0) {
    took[took.length - 1] += ` (failed, exit ${status}${res.signal ? `, ${res.signal}` : ''})`;
    break;
  }
}
const cpu = childrenCpuSeconds();
const cpuNote =
  cpu === undefined ? '' : `; CPU ${cpu} s over all processes, so ${Math.round(cpu / os.cpus().length)} s of wall at best on ${os.cpus().length} cores`;
process.stdout.write(`${figure}=${seconds(performance.now() - started)} (${took.join(', ')}${cpuNote}; FORGE_TEST_SET=${set})\n`);
process.exit(status);

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
