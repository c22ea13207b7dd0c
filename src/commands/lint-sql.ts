import type { Command } from 'commander';
import type { PolicyReport } from '../policy';
import { ExitCode } from './exit-codes';
import { printResult } from './output';
import { readInputBytes } from './read-input';
import { policyModule } from './deferred';

/**
 * `forge lint-sql FILE|- [--json] [--schema NAME]`: judges a migration against the schema policy, no database needed.
 * Prints `{accepted, statements: [{index, kind, accepted, rule, message, text, location}]}` with --json; exit 0 when
 * accepted, 1 when rejected, 2 when the file cannot be read.
 */
export function registerLintSql(program: Command): void {
  program
    .command('lint-sql')
    .description('Check a migration against the schema policy (no database needed)')
    .argument('<file>', 'the migration (SQL), or - for stdin')
    .option('--schema <name>', 'the schema migrations may touch', 'public')
    .option('--json', 'print one JSON object')
    .action(async (file: string, opts: { schema: string; json?: boolean }) => {
      // Bytes, not a string: text that is not UTF-8 is refused by the policy (invalid-utf8), never silently replaced.
      const sql = await readInputBytes(file);
      // The parser (PostgreSQL's, in WebAssembly) is loaded when the command runs, not for --help.
      const { checkMigration } = policyModule();
      const report = await checkMigration(sql, { schema: opts.schema });
      printResult(!!opts.json, report, () => describeReport(file, report));
      process.exitCode = report.accepted ? ExitCode.ok : ExitCode.refused;
    });
}

function describeReport(file: string, report: PolicyReport): string {
  const name = file === '-' ? 'stdin' : file;
  const lines: string[] = [];
  for (const s of report.statements) {
    const where = s.location ? `${name}:${s.location.line}:${s.location.column}` : name;
    lines.push(`${where} [${s.index}] ${s.kind}: ${s.accepted ? 'accepted' : 'REJECTED'} (${s.rule})`);
    lines.push(`    ${firstLine(s.text)}`);
    if (s.message) lines.push(`    ${s.message}`);
  }
  const refused = report.statements.filter((s) => !s.accepted).length;
  if (report.problem) {
    const at = report.problem.location ? `:${report.problem.location.line}:${report.problem.location.column}` : '';
    lines.push(`${name}${at}: rejected (${report.problem.rule}): ${report.problem.message}`);
  } else if (report.statements.length === 0) lines.push(`${name}: rejected: the migration holds no statement`);
  else if (report.accepted) lines.push(`${name}: accepted (${report.statements.length} statement(s))`);
  else lines.push(`${name}: rejected: ${refused} of ${report.statements.length} statement(s) refused; nothing would run`);
  return lines.join('\n');
}

function firstLine(text: string): string {
  const newline = text.indexOf('\n');
  return newline < 0 ? text : `${text.slice(0, newline)} ...`;
}
