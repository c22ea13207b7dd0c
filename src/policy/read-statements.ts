import type { Node, ParseResult } from 'libpg-query';
import { parseSql } from './parser';
import { splitStatements } from './split';
import { TextIndex } from './text-index';

/** One statement of a migration: its parse tree, or why it did not parse. Offsets are UTF-16, end exclusive. */
export interface RawStatement {
  start: number;
  end: number;
  node?: Node;
  /** The parser's message when the statement does not parse. */
  error?: string;
  /** UTF-16 offset in the migration where the parser stopped, when it says. */
  errorOffset?: number;
  /** The parse tree was too deep to be read (the parser's result overflowed the stack). */
  tooDeep?: boolean;
}

/**
 * Reads a migration into statements. When the text parses as a whole, the parser's own statement boundaries are
 * used; otherwise the text is split with the lexer (see splitStatements) and each piece is parsed alone, so every
 * statement still gets a verdict of its own.
 */
export function readStatements(sql: string): RawStatement[] {
  if (sql.trim() === '') return [];
  const index = new TextIndex(sql);
  try {
    return fromParseResult(parseSql(sql), sql, index, 0);
  } catch {
    // Fall through: split with the lexer and parse statement by statement.
  }
  const out: RawStatement[] = [];
  for (const span of splitStatements(sql)) {
    const text = sql.slice(span.start, span.end);
    try {
      out.push(...fromParseResult(parseSql(text), text, new TextIndex(text), span.start));
    } catch (err) {
      const { message, cursor } = describeParseError(err);
      out.push({
        ...span,
        error: message,
        // V8's stack (RangeError) or the grammar's own stack ("memory exhausted") ran out: nesting, not a typo.
        tooDeep: err instanceof RangeError || /memory exhausted|stack depth limit exceeded/.test(message) || undefined,
        errorOffset: cursor === undefined ? undefined : span.start + Math.min(cursor, text.length),
      });
    }
  }
  return out;
}

function fromParseResult(result: ParseResult, text: string, index: TextIndex, base: number): RawStatement[] {
  const out: RawStatement[] = [];
  for (const raw of result.stmts ?? []) {
    if (!raw.stmt) continue;
    // libpg_query leaves stmt_location out when it is 0 and reports stmt_len 0 for "up to the end of the text".
    const startByte = raw.stmt_location ?? 0;
    const start = index.charOffset(startByte);
    let end = raw.stmt_len ? index.charOffset(startByte + raw.stmt_len) : text.length;
    while (end > start && isSpace(text.charCodeAt(end - 1))) end--;
    out.push({ start: base + start, end: base + end, node: raw.stmt });
  }
  return out;
}

function describeParseError(err: unknown): { message: string; cursor?: number } {
  const message = err instanceof Error ? err.message : String(err);
  const details = (err as { sqlDetails?: { cursorPosition?: number } }).sqlDetails;
  const cursor = details && typeof details.cursorPosition === 'number' && details.cursorPosition >= 0 ? details.cursorPosition : undefined;
  return { message, cursor };
}

/** PostgreSQL's whitespace (scan.l `space`): space, tab, newline, carriage return, form feed, vertical tab. */
function isSpace(code: number): boolean {
  return code === 32 || (code >= 9 && code <= 13);
}
