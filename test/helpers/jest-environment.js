'use strict';
/**
 * The environment every test file runs in (jest.config.js): Node's, plus one step once the file is over, after its last
 * afterAll hook: the function test/helpers/after-file.ts leaves on the file's global, which ends the process-wide
 * helpers the file's copy of Forge started (src/process/process-helpers.ts: the spawn helper, esbuild's service, the
 * type checker's thread). An afterAll hook of a setup file would run before the file's own ones, whose teardown (a
 * platform's, a sandbox run's cleanup) may still use them.
 */
// jest's own environment for `testEnvironment: 'node'`, installed with jest.
const { TestEnvironment } = require('jest-environment-node');

const AFTER_FILE = Symbol.for('forge.test.afterFile');

class ForgeTestEnvironment extends TestEnvironment {
  async handleTestEvent(event) {
    if (event.name !== 'run_finish') return;
    const afterFile = this.global[AFTER_FILE];
    if (typeof afterFile === 'function') await afterFile();
  }
}

module.exports = ForgeTestEnvironment;
