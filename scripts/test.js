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
process.stdout.write(`${figure}=${seconds(performance.now() - started)} (${took.join(', ')}; FORGE_TEST_SET=${set})\n`);
process.exit(status);

function seconds(ms) {
  return Math.round(ms / 100) / 10;
}
