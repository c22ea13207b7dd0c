'use strict';
/**
 * Ends the test output with the plain closing line CI reads in any language: "N passed, N failed, N skipped".
 * Jest's own summary ("Tests: 3 passed, 3 total") is not in that form.
 */
class SummaryReporter {
  onRunComplete(_contexts, results) {
    const skipped = results.numPendingTests + results.numTodoTests;
    process.stdout.write(`\njest: ${results.numPassedTests} passed, ${results.numFailedTests} failed, ${skipped} skipped\n`);
  }
}
module.exports = SummaryReporter;
