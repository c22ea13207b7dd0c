'use strict';
/**
 * Which test files each run holds (docs/testing.md). One list, test/long-suites.json, names the files `npm test`
 * leaves out, each with why:
 *  - `quick` (`npm test`): every test file not listed, the suite a developer runs before a commit (goal: under 12
 *    minutes with setup, build and lint on the project's 2-core machine; `npm_test_wall_s` says how long it took);
 *  - `long` (`npm run test:long`): the listed long runs: clean installs, scale, red-team corpora, end-to-end
 *    promotions, the chaos cells other than the matrix;
 *  - `chaos` (`npm run test:chaos`, FORGE_CHAOS_MATRIX=full): the fault-injection matrix, whole.
 * .ci/run runs all three, so CI runs every file. jest.config.js narrows jest to one set when FORGE_TEST_SET names it;
 * unset, jest sees every file (so `npm run jest -- <path>` runs any one file). test/contract/test-sets.test.ts
 * checks that each file is in exactly one set.
 */
const path = require('node:path');

const ROOT = path.resolve(__dirname, '..');
const LIST = path.join(ROOT, 'test', 'long-suites.json');
const SETS = ['quick', 'long', 'chaos'];

/** The listed files of each set that is a list, as paths relative to the repository root. */
function listed() {
  const list = require(LIST);
  return { long: Object.keys(list.long), chaos: Object.keys(list.chaos) };
}

/** A regular expression matching exactly this repository-relative file, for jest's path patterns. */
function exactPath(rel) {
  return `^${path.join(ROOT, rel).replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`;
}

/**
 * The jest options that narrow the run to `set` (one of SETS), or none when it is unset or empty. An unknown name
 * throws, so a typo does not silently run everything.
 */
function jestOptions(set) {
  if (!set) return {};
  if (!SETS.includes(set)) throw new Error(`FORGE_TEST_SET=${set}: expected one of ${SETS.join(', ')}`);
  const files = listed();
  if (set === 'quick') return { testPathIgnorePatterns: [...files.long, ...files.chaos].map(exactPath) };
  return { testMatch: files[set].map((rel) => path.join(ROOT, rel)) };
}

module.exports = { SETS, LIST, listed, jestOptions };
