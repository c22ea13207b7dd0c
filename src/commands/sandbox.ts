import { basename, extname } from 'node:path';
import type { Command } from 'commander';
import { isToolName, toolNameMessage } from '../contract/tool-name';
import type { SandboxVerdict, SandboxDiagnostics } from '../sandbox';
import type { TypeCheckError, TypecheckMode } from '../contract/sandbox-verdict';
import { beforeExit } from './at-exit';
import { ExitCode, UsageError } from './exit-codes';
import { printResult } from './output';
import { parseJsonOption, readInputFile } from './read-input';
import { configModule, sandboxErrorsModule, sandboxModule, typecheckModule } from './deferred';

/** `forge sandbox FILE.ts [--name N] [--test-input JSON] [--json]`: the sandbox check alone, no Temporal needed. */
export function registerSandbox(program: Command): void {
  program
    .command('sandbox')
    .description('Compile, type-check (FORGE_TYPECHECK) and test one tool module in the bounded sandbox (no Temporal needed)')
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
      const { runSandbox, sandboxCleanupsDone, compileTool } = sandboxModule();
      const { loadConfig } = configModule();
      beforeExit(sandboxCleanupsDone);
      const config = loadConfig();
      const started = performance.now();
      // As a deployment orders its stages: a module that does not compile is the compile stage's (runSandbox says
      // so); for one that compiles, the checker's verdict comes before the run's. Both run at once, though (the
      // checker's first check in a fresh process takes a second or two), and a type error ends the run.
      const checking = config.typecheck !== 'off' && (await compileTool(source, name)).ok ? typecheck(config.typecheck, source, name) : undefined;
      const abort = new AbortController();
      const running = runSandbox({ name, source, input, limits: config.sandbox.limits, signal: abort.signal });
      const checked = await checking?.catch(async (err: unknown) => {
        abort.abort();
        await running;
        throw err;
      });
      let verdict: SandboxVerdict;
      if (checked && 'rejected' in checked) {
        abort.abort();
        await running;
        verdict = { ...checked.rejected, durationMs: Math.round(performance.now() - started) };
      } else {
        verdict = await running;
        // FORGE_TYPECHECK=warn: what the checker found goes with whatever the run decided.
        if (checked?.typeErrors.length) {
          verdict.diagnostics = { ...(verdict.diagnostics ?? { phase: 'typecheck' }), typeErrors: checked.typeErrors } as SandboxDiagnostics;
        }
      }
      printResult(!!opts.json, verdict, () => describeVerdict(name, verdict));
      process.exitCode = verdict.status === 'passed' ? ExitCode.ok : ExitCode.refused;
    });
}

/**
 * The typecheck stage as a deployment runs it (src/activities/tool-activities.ts typecheckModule): with `error`, type
 * errors (or a checker that timed out or failed) are the verdict, `failed` with phase `typecheck`; with `warn`, they
 * are only reported.
 */
async function typecheck(
  mode: Exclude<TypecheckMode, 'off'>,
  source: string,
  name: string,
): Promise<{ rejected: Omit<SandboxVerdict, 'durationMs'> } | { typeErrors: TypeCheckError[] }> {
  const { typecheckTool, typeErrorsMessage } = typecheckModule();
  const { TypecheckTimeoutError, TypecheckCrashedError } = sandboxErrorsModule();
  try {
    const result = await typecheckTool(source, name);
    if (result.errors.length === 0 || mode === 'warn') return { typeErrors: result.errors };
    return { rejected: { status: 'failed', error: typeErrorsMessage(result), diagnostics: { phase: 'typecheck', typeErrors: result.errors } } };
  } catch (err) {
    if (!(err instanceof TypecheckTimeoutError || err instanceof TypecheckCrashedError)) throw err;
    // With warn, a checker that gave no answer holds nothing up (a deployment's result says so; here stderr does).
    if (mode === 'warn') {
      process.stderr.write(`${name}: not type-checked: ${err.message}\n`);
      return { typeErrors: [] };
    }
    const status = err instanceof TypecheckTimeoutError ? 'timeout' : 'crashed';
    return {
      rejected: {
        status,
        error: `${err.message}; FORGE_TYPECHECK=warn runs the tool without waiting for it, =off skips it`,
        diagnostics: { phase: 'typecheck' },
      },
    };
  }
}

function describeVerdict(name: string, v: SandboxVerdict): string {
  const lines = [`${name}: ${v.status} in ${v.durationMs} ms`];
  if (v.status === 'passed') lines.push(JSON.stringify(v.output, null, 2));
  if (v.error) lines.push(v.error);
  for (const e of v.diagnostics?.compileErrors?.slice(1) ?? []) lines.push(e.message);
  const typeErrors = v.diagnostics?.typeErrors ?? [];
  if (v.diagnostics?.phase === 'typecheck') for (const e of typeErrors.slice(1)) lines.push(e.message);
  else if (typeErrors.length > 0) lines.push('type errors (FORGE_TYPECHECK=warn):', ...typeErrors.map((e) => `  ${e.message}`));
  if (v.stderrTail) lines.push('--- stderr (tail) ---', v.stderrTail.trimEnd());
  return lines.join('\n');
}
