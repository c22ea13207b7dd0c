#!/usr/bin/env node
'use strict';
/**
 * Part of `npm run build`: bundles the compiled workflows (dist/src/workflows) once, into
 * dist/src/workflow-bundle.js, which `forge worker` and `forge up` load instead of bundling at every start. A worker
 * restarted after a crash is then polling in about a second rather than several, while the runs it held wait.
 */
const { writeFileSync } = require('node:fs');
const path = require('node:path');
const { bundleWorkflowCode, DefaultLogger } = require('@temporalio/worker');

const dist = path.join(__dirname, '..', 'dist', 'src');

async function main() {
  const { code } = await bundleWorkflowCode({
    workflowsPath: require.resolve(path.join(dist, 'workflows')),
    logger: new DefaultLogger('WARN'),
  });
  writeFileSync(path.join(dist, 'workflow-bundle.js'), code);
}

main().catch((err) => {
  process.stderr.write(`bundle-workflows: ${err.stack ?? err}\n`);
  process.exit(1);
});
