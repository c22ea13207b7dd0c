import { createHash } from 'node:crypto';

/**
 * The checksum SCHEMA_POLICY.md records with a migration: sha256 (hex) of its exact text, UTF-8. Any change, even in
 * whitespace or a comment, is a different migration.
 */
export function migrationChecksum(sql: string): string {
  return createHash('sha256').update(sql, 'utf8').digest('hex');
}
