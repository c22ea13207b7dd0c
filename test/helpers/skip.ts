/**
 * The one way a test is skipped here: with its reason in its name. `describeIf(ok, reason)` and `testIf(ok, reason)`
 * are `describe` / `test` when `ok`, and otherwise `describe.skip` / `test.skip` with ` [skipped: <reason>]` appended
 * to the name, so every skipped test's full name says why, and the run's closing summary
 * (test/helpers/summary-reporter.js) counts the skips by reason. test/platform/skip-reasons.test.ts refuses a `.skip`
 * anywhere else.
 */

/** The mark a skipped test's name carries; summary-reporter.js reads it back. */
export const SKIP_MARK = '[skipped: ';

/** `name` with the reason it is skipped. */
export function skippedName(name: string, reason: string): string {
  return `${name} ${SKIP_MARK}${reason}]`;
}

type Block = (name: string, fn: () => void) => void;
type Case = (name: string, fn: jest.ProvidesCallback, timeout?: number) => void;

/**
 * `describe`, or `describe.skip` naming `reason`, when `ok` is false. The skip below is the mechanism, not a skip of
 * its own: every caller passes the reason (no PostgreSQL, not root, no cgroup, the full chaos matrix only, ...).
 */
export function describeIf(ok: unknown, reason: string): Block {
  return (name, fn) => (ok ? describe(name, fn) : describe.skip(skippedName(name, reason), fn));
}

/** `test`, or `test.skip` naming `reason`, when `ok` is false (the reason is the caller's, as for describeIf). */
export function testIf(ok: unknown, reason: string): Case {
  return (name, fn, timeout) => (ok ? test(name, fn, timeout) : test.skip(skippedName(name, reason), fn, timeout));
}
