#!/usr/bin/env node
'use strict';
// The published entry point: runs the compiled CLI (npm run build writes dist/), then exits once stdout and stderr
// are drained (a bare process.exit() cuts off what a slow pipe has not read yet).
const { main, exitWhenDrained } = require('../dist/src/cli.js');
main(process.argv).then(
  (code) => exitWhenDrained(code),
  (err) => {
    console.error(err && err.stack ? err.stack : String(err));
    return exitWhenDrained(1);
  },
);
