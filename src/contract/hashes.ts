import { sha256 } from '@noble/hashes/sha2';
import { bytesToHex, utf8ToBytes } from '@noble/hashes/utils';

/*
 * The identities a client computes and a worker checks again. Plain JavaScript sha256 (@noble/hashes) rather than
 * node:crypto, so that the contract loads wherever a client runs; the inputs are at most a few MiB.
 */

function sha256Hex(text: string): string {
  return bytesToHex(sha256(utf8ToBytes(text)));
}

/** JSON with object keys sorted at every level, so equal values always serialise to equal text. */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) =>
    v && typeof v === 'object' && !Array.isArray(v)
      ? Object.fromEntries(Object.entries(v as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
      : v,
  );
}

/**
 * The identity of a tool submission: sha256 over its name, source, test input and description. Two submissions with
 * the same hash are the same deployment (one workflow run); a stored version with the same hash is the same version.
 */
export function toolContentHash(input: { name: string; source: string; testInput?: unknown; description?: string }): string {
  return sha256Hex(canonicalJson({ name: input.name, source: input.source, testInput: input.testInput ?? null, description: input.description ?? '' }));
}

/**
 * The checksum SCHEMA_POLICY.md records with a migration: sha256 (hex) of its exact text, UTF-8. Any change, even in
 * whitespace or a comment, is a different migration.
 */
export function migrationChecksum(sql: string): string {
  return sha256Hex(sql);
}
