/**
 * The input JSON Schema the sandbox derived while testing a version (src/sandbox/harness.cjs), as stored inside the
 * version's verdict; empty for tools whose schema zod cannot express or that do not use zod.
 */
export function inputJsonSchemaOf(verdict: unknown): { inputJsonSchema?: unknown } {
  const schema = (verdict as { diagnostics?: { tool?: { inputJsonSchema?: unknown } } } | null)?.diagnostics?.tool?.inputJsonSchema;
  return schema === undefined ? {} : { inputJsonSchema: schema };
}
