import type { Command } from 'commander';
import { ExitCode } from './exit-codes';
import { printError, printResult } from './output';
import { temporalBinaryModule } from './deferred';

/**
 * `forge setup [--json]`: scripts/setup.js, as `npm run setup` runs it in a checkout, for a project that installed the
 * package (`npx forge setup`), which has no setup script of its own. Finds the temporal CLI (PATH, $FORGE_HOME) or
 * installs it under $FORGE_HOME; what it does goes to stderr. startForge() and `forge up` do the same when they find
 * no binary, so this is for doing it ahead of time, or again once what made it fail is fixed.
 */
export function registerSetup(program: Command): void {
  program
    .command('setup')
    .description("Find or install the temporal CLI (its dev server runs Forge's Temporal) under $FORGE_HOME, as `npm run setup` does in a checkout")
    .option('--json', 'print one JSON object')
    .action((opts: { json?: boolean }) => {
      const { findTemporalBinary, runSetup } = temporalBinaryModule();
      // Both read the process's own environment (PATH, FORGE_HOME), as setup.js does: temporal-binary.ts is their reader.
      const code = runSetup();
      const binary = findTemporalBinary();
      if (code === 0 && binary !== undefined) {
        printResult(opts.json === true, { temporal: binary }, () => binary);
        return;
      }
      printError(opts.json === true, 'the temporal CLI could not be installed (setup said why, above)');
      process.exitCode = ExitCode.refused;
    });
}
