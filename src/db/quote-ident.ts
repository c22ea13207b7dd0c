/** An identifier quoted for SQL text (roles, schemas), where a parameter cannot stand. */
export function quoteIdent(name: string): string {
  return `"${name.split('"').join('""')}"`;
}
