/** @type {import('jest').Config} */
module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/test'],
  testMatch: ['**/*.test.ts'],
  transform: { '^.+\\.ts$': ['ts-jest', { tsconfig: 'tsconfig.json' }] },
  testPathIgnorePatterns: ['/node_modules/', '/fixtures/'],
  // Suites start real child processes, Temporal dev servers and databases; 2 cores, so keep parallelism low.
  maxWorkers: 2,
  testTimeout: 60_000,
  reporters: ['default', '<rootDir>/test/helpers/summary-reporter.js'],
};
