import { basename, extname } from 'node:path';
import type { Command } from 'commander';
import type { DeployToolResult } from '../contract/tool-runs';
import { WAIT_HELP, withForgeClient } from './connect';
import { ExitCode } from './exit-codes';
import { printResult } from './output';
import { progressPrinter } from './progress-display';
import { parseJsonOption, readInputFile } from './read-input';

/** `forge deploy FILE.ts [--name N] [--test-input JSON] [--description TEXT] [--json]`: through the deployment workflow. */
export function registerDeploy(program: Command): void {
  program
    .command('deploy')
    .description('Deploy a tool: compile, test in the sandbox, persist a new version and make it active (a Temporal workflow)')
    .argument('<file>', 'the tool module (TypeScript)')
    .option('--name <name>', "the tool's name (default: the file's base name)")
    .option('--test-input <json>', 'the input the test run calls execute with', '{}')
    .option('--description <text>', 'what the tool does (stored with the version)')
    .option('--json', 'print one JSON object')
    .option('--wait', WAIT_HELP)
    .action(async (file: string, opts: { name?: string; testInput: string; description?: string; json?: boolean; wait?: boolean }) => {
      const testInput = parseJsonOption('--test-input', opts.testInput);
      const source = await readInputFile(file);
      const name = opts.name ?? basename(file, extname(file));
      const result = await withForgeClient(
        async (forge) => {
          const handle = await forge.startDeployTool({ name, source, testInput, description: opts.description });
          process.stderr.write(`deploying ${name} — run ${handle.workflowId}\n`);
          return handle.result({ onProgress: progressPrinter() });
        },
        { wait: opts.wait },
      );
      printResult(!!opts.json, result, () => describeDeploy(result));
      process.exitCode = result.status === 'active' ? ExitCode.ok : ExitCode.refused;
    });
}

function describeDeploy(r: DeployToolResult): string {
  const typeErrors = r.diagnostics.typeErrors ?? [];
  if (r.status === 'active') {
    if (r.unchanged) return `${r.name} v${r.version} is already active with this content; nothing changed.`;
    const active = `${r.name} v${r.version} is active${r.previousVersion !== undefined ? ` (was v${r.previousVersion})` : ''}.`;
    // FORGE_TYPECHECK=warn: deployed, and what the checker found is said.
    return typeErrors.length > 0 ? [active, 'type errors (FORGE_TYPECHECK=warn):', ...typeErrors.map((e) => `  ${e.message}`)].join('\n') : active;
  }
  const lines = [`${r.name} was rejected at ${r.diagnostics.stage} (${r.verdict}): ${r.diagnostics.message}`];
  for (const e of r.diagnostics.compileErrors?.slice(1) ?? []) lines.push(`  ${e.message}`);
  for (const e of typeErrors.slice(1)) lines.push(`  ${e.message}`);
  if (r.diagnostics.sandbox?.stderrTail) lines.push('--- stderr (tail) ---', r.diagnostics.sandbox.stderrTail.trimEnd());
  return lines.join('\n');
}
