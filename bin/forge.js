#!/usr/bin/env node
'use strict';
// The published entry point: runs the compiled CLI (npm run build writes dist/).
require('../dist/src/cli.js').main(process.argv).then(
  (code) => process.exit(code),
  (err) => {
    console.error(err && err.stack ? err.stack : String(err));
    process.exit(1);
  },
);
