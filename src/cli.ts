import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { Command, CommanderError } from 'commander';
import { ExitCode, UsageError } from './commands/exit-codes';
import { drainOutput, printError, printResult } from './commands/output';
import { ConfigError, ForgeInputError, NoWorkerError, PlatformUnreachableError, SearchAttributesMissingError } from './contract/errors';
import { DevServerError, TemporalBinaryNotFoundError } from './platform/errors';
import { waitBeforeExit } from './commands/at-exit';
import { registerCall } from './commands/call';
import { registerDelete } from './commands/delete';
import { registerDeploy } from './commands/deploy';
import { registerLintSql } from './commands/lint-sql';
import { registerMigrate } from './commands/migrate';
import { registerMcp } from './commands/mcp';
import { registerMigrations } from './commands/migrations';
import { registerPromote } from './commands/promote';
import { registerReverify } from './commands/reverify';
import { registerRollback } from './commands/rollback';
import { registerRuns } from './commands/runs';
import { registerSandbox } from './commands/sandbox';
import { registerSetup } from './commands/setup';
import { registerTools } from './commands/tools';
import { registerUp } from './commands/up';
import { registerPay, registerPnl, registerSell, registerServices } from './commands/x402';

/** Builds the `forge` program; each command lives in src/commands/<name>.ts and sets process.exitCode. */
export function buildProgram(): Command {
  const program = new Command('forge')
    .description('Forge: an AI agent extends itself safely and durably, on Temporal.')
    .version(packageVersion(), '--version', 'print the package version')
    .exitOverride()
    .configureOutput({ writeErr: (s) => process.stderr.write(s) })
    .showHelpAfterError();
  registerUp(program);
  registerSetup(program);
  registerSandbox(program);
  registerDeploy(program);
  registerTools(program);
  registerRollback(program);
  registerDelete(program);
  registerCall(program);
  registerLintSql(program);
  registerMigrate(program);
  registerMigrations(program);
  registerPromote(program);
  registerRuns(program);
  registerReverify(program);
  registerMcp(program);
  registerPay(program);
  registerPnl(program);
  registerSell(program);
  registerServices(program);
  return program;
}

/** The version in Forge's package.json, found above this file (src/ under ts-jest, dist/src/ once built). */
function packageVersion(): string {
  for (let dir = __dirname; ; dir = path.dirname(dir)) {
    const file = path.join(dir, 'package.json');
    if (existsSync(file)) {
      const pkg = JSON.parse(readFileSync(file, 'utf8')) as { name?: string; version?: string };
      if (pkg.name === 'agent-forge' && pkg.version) return pkg.version;
    }
    if (path.dirname(dir) === dir) return 'unknown';
  }
}

/**
 * Ends the process with `code` once stdout and stderr are drained (bin/forge.js, after main). The exit stays explicit
 * so that no handle a command leaves open on some path (a Temporal connection, a database pool, a timer) can keep the
 * CLI alive; waiting for the output first is what keeps a slow pipe from losing the end of it.
 */
export async function exitWhenDrained(code: number): Promise<never> {
  // Should anything end the process while it waits, it still ends with the command's code.
  process.exitCode = code;
  await drainOutput();
  process.exit(code);
}

/**
 * Runs the CLI and resolves to its exit code (CLI.md: 0 ok, 1 refused, 2 usage, 3 unreachable: also a platform that is
 * up but cannot run Forge's runs, with no worker polling or search attributes missing).
 */
export async function main(argv: string[]): Promise<number> {
  const program = buildProgram();
  const json = argv.includes('--json');
  try {
    process.exitCode = undefined;
    await program.parseAsync(argv);
    // bin/forge.js exits once this resolves and the output is drained: what sandbox runs left to clean up after their
    // verdicts goes first.
    await waitBeforeExit();
    return typeof process.exitCode === 'number' ? process.exitCode : ExitCode.ok;
  } catch (err) {
    if (err instanceof CommanderError) {
      // --help and --version end here with code 0; everything else commander rejects is bad usage. Commander has
      // already explained it on stderr; with --json stdout still gets its one object.
      if (err.exitCode === 0) return ExitCode.ok;
      if (json) printResult(true, { error: err.message.replace(/^error: /, '') }, () => '');
      return ExitCode.usage;
    }
    if (err instanceof UsageError || err instanceof ForgeInputError || err instanceof ConfigError) {
      printError(json, err.message);
      return ExitCode.usage;
    }
    if (err instanceof PlatformUnreachableError) {
      printError(json, err.message, { unreachable: err.address });
      return ExitCode.unreachable;
    }
    if (err instanceof NoWorkerError) {
      // The platform is up but not whole: nothing runs Forge's runs. Exit 3, as for a platform that cannot be reached.
      const { taskQueue, namespace, workflowId, runWithdrawn } = err;
      printError(json, `${err.message} Or add --wait to wait for a worker.`, { type: err.name, taskQueue, namespace, workflowId, runWithdrawn });
      return ExitCode.unreachable;
    }
    if (err instanceof SearchAttributesMissingError) {
      // A Temporal that Forge cannot run on as it is set up: nothing was started; the commands say how to fix it.
      const { namespace, missing, commands } = err;
      printError(json, err.message, { type: err.name, namespace, missing, commands });
      return ExitCode.unreachable;
    }
    if (err instanceof DevServerError || err instanceof TemporalBinaryNotFoundError) {
      // `forge up` could not start its dev server (port taken, binary missing): the reason, not a stack trace.
      printError(json, err.message);
      return ExitCode.refused;
    }
    throw err;
  }
}
