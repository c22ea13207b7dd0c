import { stopProcessHelpers } from '../../src/process/process-helpers';

/*
 * Loaded before every test file (jest.config.js, setupFilesAfterEnv). What test/helpers/jest-environment.js runs once
 * the file is over: end the helpers this file's copy of Forge started. Left running, each file's kept its whole module
 * registry alive in the jest worker until the worker exited (src/process/process-helpers.ts).
 */
(globalThis as Record<symbol, unknown>)[Symbol.for('forge.test.afterFile')] = stopProcessHelpers;
