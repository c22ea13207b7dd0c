import { createHash } from 'node:crypto';

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
  return createHash('sha256')
    .update(canonicalJson({ name: input.name, source: input.source, testInput: input.testInput ?? null, description: input.description ?? '' }))
    .digest('hex');
}
