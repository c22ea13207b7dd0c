const { jestOptions } = require('./scripts/test-sets');

// FORGE_TEST_SET=quick|long|chaos narrows the run to one set (scripts/test-sets.js, test/long-suites.json): `npm test`
// sets quick, `npm run test:long` long. Unset, every test file (so `npm run jest -- <path>` runs any one of them).
const set = jestOptions(process.env.FORGE_TEST_SET);

/** @type {import('jest').Config} */
module.exports = {
  // Node's, ending after each test file the process-wide helpers (spawn helper, esbuild, type checker) it started.
  testEnvironment: '<rootDir>/test/helpers/jest-environment.js',
  setupFilesAfterEnv: ['<rootDir>/test/helpers/after-file.ts'],
  roots: ['<rootDir>/test'],
  testMatch: set.testMatch ?? ['**/*.test.ts'],
  transform: { '^.+\\.ts$': ['ts-jest', { tsconfig: 'tsconfig.json' }] },
  testPathIgnorePatterns: ['/node_modules/', '/fixtures/', ...(set.testPathIgnorePatterns ?? [])],
  // Suites start real child processes, Temporal dev servers and databases; 2 cores, so keep parallelism low.
  maxWorkers: 2,
  testTimeout: 60_000,
  reporters: ['default', '<rootDir>/test/helpers/summary-reporter.js'],
};
