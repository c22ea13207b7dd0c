import { basename, extname } from 'node:path';
import type { Command } from 'commander';
import { isToolName, toolNameMessage } from '../contract/tool-name';
import type * as ConfigModule from '../config';
import type { SandboxVerdict } from '../sandbox';
import type * as SandboxModule from '../sandbox';
import { beforeExit } from './at-exit';
import { ExitCode, UsageError } from './exit-codes';
import { printResult } from './output';
import { parseJsonOption, readInputFile } from './read-input';

/** `forge sandbox FILE.ts [--name N] [--test-input JSON] [--json]`: the sandbox check alone, no Temporal needed. */
export function registerSandbox(program: Command): void {
  program
    .command('sandbox')
    .description('Compile and test one tool module in the bounded sandbox (no Temporal needed)')
    .argument('<file>', 'the tool module (TypeScript)')
    .option('--name <name>', "the tool's name (default: the file's base name)")
    .option('--test-input <json>', 'the input execute is called with', '{}')
    .option('--json', 'print one JSON object')
    .action(async (file: string, opts: { name?: string; testInput: string; json?: boolean }) => {
      const name = opts.name ?? basename(file, extname(file));
      if (!isToolName(name)) {
        throw new UsageError(`${toolNameMessage(name)} (pass --name)`);
      }
      const input = parseJsonOption('--test-input', opts.testInput);
      const source = await readInputFile(file);
      // Loaded when the command runs (see at-exit.ts); the run's cleanup may finish after its verdict.
      /* eslint-disable @typescript-eslint/no-require-imports */
      const { runSandbox, sandboxCleanupsDone } = require('../sandbox') as typeof SandboxModule;
      const { loadConfig } = require('../config') as typeof ConfigModule;
      /* eslint-enable @typescript-eslint/no-require-imports */
      beforeExit(sandboxCleanupsDone);
      const verdict = await runSandbox({ name, source, input, limits: loadConfig().sandbox.limits });
      printResult(!!opts.json, verdict, () => describeVerdict(name, verdict));
      process.exitCode = verdict.status === 'passed' ? ExitCode.ok : ExitCode.refused;
    });
}

function describeVerdict(name: string, v: SandboxVerdict): string {
  const lines = [`${name}: ${v.status} in ${v.durationMs} ms`];
  if (v.status === 'passed') lines.push(JSON.stringify(v.output, null, 2));
  if (v.error) lines.push(v.error);
  for (const e of v.diagnostics?.compileErrors?.slice(1) ?? []) lines.push(e.message);
  if (v.stderrTail) lines.push('--- stderr (tail) ---', v.stderrTail.trimEnd());
  return lines.join('\n');
}
