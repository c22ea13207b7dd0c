/** @type {import('jest').Config} */
module.exports = {
  // Node's, ending after each test file the process-wide helpers (spawn helper, esbuild, type checker) it started.
  testEnvironment: '<rootDir>/test/helpers/jest-environment.js',
  setupFilesAfterEnv: ['<rootDir>/test/helpers/after-file.ts'],
  roots: ['<rootDir>/test'],
  testMatch: ['**/*.test.ts'],
  transform: { '^.+\\.ts$': ['ts-jest', { tsconfig: 'tsconfig.json' }] },
  testPathIgnorePatterns: ['/node_modules/', '/fixtures/'],
  // Suites start real child processes, Temporal dev servers and databases; 2 cores, so keep parallelism low.
  maxWorkers: 2,
  testTimeout: 60_000,
  reporters: ['default', '<rootDir>/test/helpers/summary-reporter.js'],
};
