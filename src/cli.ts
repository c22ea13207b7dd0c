import { Command, CommanderError } from 'commander';
import { ExitCode, UsageError } from './commands/exit-codes';
import { printError } from './commands/output';
import { registerSandbox } from './commands/sandbox';

/** Builds the `forge` program; each command lives in src/commands/<name>.ts and sets process.exitCode. */
export function buildProgram(): Command {
  const program = new Command('forge')
    .description('Forge: an AI agent extends itself safely and durably, on Temporal.')
    .exitOverride()
    .configureOutput({ writeErr: (s) => process.stderr.write(s) })
    .showHelpAfterError();
  registerSandbox(program);
  return program;
}

/** Runs the CLI and resolves to its exit code (CLI.md: 0 ok, 1 refused, 2 usage, 3 unreachable). */
export async function main(argv: string[]): Promise<number> {
  const program = buildProgram();
  const json = argv.includes('--json');
  try {
    process.exitCode = undefined;
    await program.parseAsync(argv);
    return typeof process.exitCode === 'number' ? process.exitCode : ExitCode.ok;
  } catch (err) {
    if (err instanceof CommanderError) {
      // --help and --version end here with code 0; everything else commander rejects is bad usage.
      return err.exitCode === 0 ? ExitCode.ok : ExitCode.usage;
    }
    if (err instanceof UsageError) {
      printError(json, err.message);
      return ExitCode.usage;
    }
    throw err;
  }
}
