'use strict';
/**
 * Ends the test output with the plain closing line CI reads in any language: "N passed, N failed, N skipped".
 * Jest's own summary ("Tests: 3 passed, 3 total") is not in that form.
 *
 * Below it, why the skipped ones were skipped, counted by reason: a test is skipped through test/helpers/skip.ts, whose
 * `describeIf` / `testIf` put `[skipped: <reason>]` in its name (a bare count of skips said nothing: 465 of them,
 * most of them the red-team corpus without DATABASE_URL). Tests left out by `-t` are counted apart; a skip with no
 * reason is named, file and test, so it can be given one.
 */
const MARK = /\[skipped: ([^\]]*)\]/;

class SummaryReporter {
  constructor(globalConfig) {
    this.filtered = Boolean(globalConfig && globalConfig.testNamePattern);
  }

  onRunComplete(_contexts, results) {
    const skipped = results.numPendingTests + results.numTodoTests;
    const lines = [`\njest: ${results.numPassedTests} passed, ${results.numFailedTests} failed, ${skipped} skipped`];
    const reasons = new Map();
    const unexplained = [];
    let notSelected = 0;
    for (const file of results.testResults) {
      for (const t of file.testResults) {
        if (t.status === 'todo') {
          count(reasons, `to do: ${t.title}`);
          continue;
        }
        if (t.status !== 'pending' && t.status !== 'skipped') continue;
        const mark = MARK.exec(t.fullName);
        if (mark) count(reasons, mark[1]);
        else if (this.filtered) notSelected++;
        else unexplained.push(`${relative(file.testFilePath)}: ${t.fullName}`);
      }
    }
    for (const [reason, n] of [...reasons].sort((a, b) => b[1] - a[1])) lines.push(`  ${n} skipped: ${reason}`);
    if (notSelected > 0) lines.push(`  ${notSelected} not run: not selected by -t`);
    if (unexplained.length > 0) {
      lines.push(`  ${unexplained.length} skipped WITHOUT A REASON (skip through test/helpers/skip.ts, which names it):`);
      for (const name of unexplained) lines.push(`    ${name}`);
    }
    process.stdout.write(`${lines.join('\n')}\n`);
  }
}

function count(map, key) {
  map.set(key, (map.get(key) ?? 0) + 1);
}

function relative(file) {
  const at = file.lastIndexOf('/test/');
  return at >= 0 ? file.slice(at + 1) : file;
}

module.exports = SummaryReporter;
