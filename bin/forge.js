#!/usr/bin/env node
'use strict';
// The published entry point: runs the compiled CLI (npm run build writes dist/), then exits once stdout and stderr
// are drained (a bare process.exit() cuts off what a slow pipe has not read yet).
const { existsSync } = require('node:fs');
const path = require('node:path');

const cli = path.join(__dirname, '..', 'dist', 'src', 'cli.js');
if (!existsSync(cli)) {
  // A checkout before its first build (an installed package always has dist/): say so, not "Cannot find module".
  const root = path.resolve(__dirname, '..');
  process.stderr.write(`forge: Forge is not built yet (no dist/src/cli.js in ${root}): run \`npm run build\` there first (npm start builds too).\n`);
  process.exit(1);
}
const { main, exitWhenDrained } = require(cli);
main(process.argv).then(
  (code) => exitWhenDrained(code),
  (err) => {
    console.error(err && err.stack ? err.stack : String(err));
    return exitWhenDrained(1);
  },
);
