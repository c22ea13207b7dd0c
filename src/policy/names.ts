import type { Node } from 'libpg-query';

/** Prefix of the agent namespace, compared after PostgreSQL's identifier folding (the parser has folded already). */
export const AGENT_PREFIX = 'agent_';

/** NAMEDATALEN - 1: PostgreSQL silently truncates longer identifiers to this many bytes. */
export const MAX_IDENTIFIER_BYTES = 63;

/**
 * True when a (folded) name is in the agent namespace. The parser has lower-cased unquoted names and kept quoted ones
 * as written, so `AGENT_x` arrives as `agent_x` (in) and `"AGENT_x"` as `AGENT_x` (out).
 */
export function isAgentName(name: string | undefined): name is string {
  return name !== undefined && name.startsWith(AGENT_PREFIX);
}

/** A name to offer in a message: the object's name with the prefix, folded the way an unquoted name would be. */
export function suggestAgentName(name: string): string {
  const folded = name.toLowerCase();
  return folded.startsWith(AGENT_PREFIX) ? folded : AGENT_PREFIX + folded;
}

/** A name written so that PostgreSQL reads it back unchanged: quoted unless it is plain lower-case. */
export function showIdent(name: string): string {
  let plain = name.length > 0;
  for (let i = 0; i < name.length && plain; i++) {
    const c = name.charCodeAt(i);
    const lower = c >= 97 && c <= 122;
    const digit = c >= 48 && c <= 57;
    plain = lower || c === 95 || ((digit || c === 36) && i > 0);
  }
  return plain ? name : `"${name.split('"').join('""')}"`;
}

/** `schema.name` or `name`, each part shown with {@link showIdent}. */
export function showQualified(parts: (string | undefined)[]): string {
  return parts
    .filter((p): p is string => p !== undefined)
    .map(showIdent)
    .join('.');
}

/** Length of an identifier in bytes of UTF-8, the unit of PostgreSQL's limit. */
export function identifierBytes(name: string): number {
  return Buffer.byteLength(name, 'utf8');
}

/** What PostgreSQL makes of a long identifier: its first 63 bytes, never cutting a character in two. */
export function truncateIdentifier(name: string): string {
  if (identifierBytes(name) <= MAX_IDENTIFIER_BYTES) return name;
  let bytes = 0;
  let out = '';
  for (const ch of name) {
    const width = Buffer.byteLength(ch, 'utf8');
    if (bytes + width > MAX_IDENTIFIER_BYTES) break;
    bytes += width;
    out += ch;
  }
  return out;
}

/** The strings of a qualified-name list (`[{String: {sval}}, ...]`); non-string items are left out. */
export function namesOf(list: Node[] | undefined): string[] {
  const out: string[] = [];
  for (const item of list ?? []) {
    if ('String' in item && typeof item.String.sval === 'string') out.push(item.String.sval);
  }
  return out;
}

/** The names of a `{List: {items}}` node, as used by DROP and COMMENT for qualified object names. */
export function namesOfListNode(node: Node | undefined): string[] {
  if (!node) return [];
  if ('List' in node) return namesOf(node.List.items);
  if ('String' in node && typeof node.String.sval === 'string') return [node.String.sval];
  if ('TypeName' in node) return namesOf(node.TypeName.names);
  return [];
}
