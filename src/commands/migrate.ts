import type { Command } from 'commander';
import type { MigrateSchemaResult } from '../contract/migration-runs';
import { WAIT_HELP, withForgeClient } from './connect';
import { ExitCode, UsageError } from './exit-codes';
import { printResult } from './output';
import { progressPrinter } from './progress-display';
import { readInputBytes } from './read-input';
import { policyModule } from './deferred';

/**
 * `forge migrate --name NAME FILE.sql [--json]`: through the migration workflow. Prints
 * `{status, name, checksum, workflowId, statements?, error?, ...}`; exit 0 applied or alreadyApplied, 1 rejected or
 * failed, 2 bad usage, 3 platform unreachable.
 */
export function registerMigrate(program: Command): void {
  program
    .command('migrate')
    .description('Apply a schema migration: checked by the schema policy, applied in one transaction with its tracking row (a Temporal workflow)')
    .argument('<file>', 'the migration (SQL), or - for stdin')
    .requiredOption('--name <name>', "the migration's name (its identity: the same name is applied once)")
    .option('--json', 'print one JSON object')
    .option('--wait', WAIT_HELP)
    .action(async (file: string, opts: { name: string; json?: boolean; wait?: boolean }) => {
      const sql = decodeMigrationFile(file, await readInputBytes(file));
      const result = await withForgeClient(
        async (forge) => {
          process.stderr.write(`migrating ${opts.name} — run schema-migrate/${opts.name}\n`);
          return forge.migrateSchema({ name: opts.name, sql }, { onProgress: progressPrinter() });
        },
        { wait: opts.wait },
      );
      printResult(!!opts.json, result, () => describeMigration(result));
      process.exitCode = result.status === 'applied' || result.status === 'alreadyApplied' ? ExitCode.ok : ExitCode.refused;
    });
}

/**
 * The migration's text; a file that is not valid UTF-8 is refused here (the schema policy's `invalid-utf8`, naming the
 * byte offset) before any run starts, since decoding it would send PostgreSQL other text than the file holds.
 */
function decodeMigrationFile(file: string, bytes: Buffer): string {
  const { decodeMigration } = policyModule();
  const decoded = decodeMigration(bytes);
  if ('problem' in decoded) throw new UsageError(`${file === '-' ? 'stdin' : file}: ${decoded.problem.message} (rule ${decoded.problem.rule})`);
  return decoded.sql;
}

function describeMigration(r: MigrateSchemaResult): string {
  switch (r.status) {
    case 'applied':
      return `${r.name} is applied (${r.statements?.length ?? 0} statement(s), at ${r.appliedAt}).`;
    case 'alreadyApplied':
      return `${r.name} was already applied at ${r.appliedAt}; nothing changed.`;
    case 'rejected': {
      const refused = r.statements?.filter((v) => !v.accepted) ?? [];
      // With the refused statements listed below, the header does not repeat the first one's message.
      const head =
        refused.length > 0 && !r.problem ? `${refused.length} of ${r.statements!.length} statement(s) refused by the schema policy; nothing ran` : r.message;
      const lines = [`${r.name} was rejected: ${head}`];
      for (const s of refused) {
        const where = s.location ? `line ${s.location.line}, column ${s.location.column}` : `statement ${s.index}`;
        lines.push(`  [${s.index}] ${s.kind} at ${where} (${s.rule}): ${s.message ?? ''}`);
      }
      return lines.join('\n');
    }
    case 'failed': {
      const e = r.error;
      const where = e?.line !== undefined ? ` at line ${e.line}, column ${e.column}` : '';
      const lines = [`${r.name} failed${where}: ${e ? `${e.message} [${e.code}]` : r.message}; rolled back, nothing of it remains.`];
      if (e?.detail) lines.push(`  detail: ${e.detail}`);
      if (e?.hint) lines.push(`  hint: ${e.hint}`);
      return lines.join('\n');
    }
  }
}
