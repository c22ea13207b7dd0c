#!/usr/bin/env node
'use strict';
/**
 * `npm run lint` (and so `npm test`): eslint over the tree, tsc's type check of the TypeScript and of the plain
 * CommonJS files (tsconfig.cjs.json), prettier's check that the code is formatted (.prettierrc.json; `npx prettier
 * --write .` formats it), and knip's check that no export, file or dependency goes unused (knip.jsonc says what the
 * entry points and the public API are). eslint and the first tsc each take most of a minute on one core and need
 * nothing from each other, so they run side by side (issue 28: `npm test` under 12 minutes on two cores), and so do
 * prettier and knip (a few seconds each); each one's output is held and printed whole when it ends, so they do not
 * interleave. Exits 1 when any failed.
 *
 * `--background` (npm test, which runs lint beside jest): at the lowest CPU priority, inherited by every job, so that
 * lint uses the CPU the tests leave idle and takes little from theirs.
 */
const { spawn } = require('node:child_process');
const os = require('node:os');
const path = require('node:path');

if (process.argv.includes('--background')) os.setPriority(19);

const root = path.resolve(__dirname, '..');
const bin = (name) => path.join(root, 'node_modules', '.bin', name);
const jobs = [
  ['eslint', [bin('eslint'), '.']],
  ['tsc', [bin('tsc'), '--noEmit', '-p', 'tsconfig.json'], [bin('tsc'), '-p', 'tsconfig.cjs.json']],
  ['prettier', [bin('prettier'), '--check', '--log-level', 'warn', '.']],
  ['knip', [bin('knip'), '--no-progress']],
];

Promise.all(jobs.map(([name, ...commands]) => runInTurn(name, commands))).then((codes) => {
  process.exit(codes.every((c) => c === 0) ? 0 : 1);
});

/** Runs the commands one after the other, stopping at the first that fails; resolves to its exit code (0: all passed). */
async function runInTurn(name, commands) {
  for (const [cmd, ...args] of commands) {
    const { code, output } = await run(cmd, args);
    if (output) process.stdout.write(output);
    if (code !== 0) {
      process.stderr.write(`lint: ${name} failed (${path.basename(cmd)} ${args.join(' ')}, exit ${code})\n`);
      return code;
    }
  }
  return 0;
}

function run(cmd, args) {
  return new Promise((resolve) => {
    const child = spawn(cmd, args, { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] });
    const chunks = [];
    child.stdout.on('data', (c) => chunks.push(c));
    child.stderr.on('data', (c) => chunks.push(c));
    child.on('error', (err) => resolve({ code: 1, output: `${err.message}\n` }));
    child.on('close', (code) => resolve({ code: code ?? 1, output: Buffer.concat(chunks).toString() }));
  });
}
