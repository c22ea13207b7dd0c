import { scanSql } from './parser';

/**
 * The identifiers written in a statement, as PostgreSQL reads them before truncation: unquoted ones folded to lower
 * case (ASCII only, as in a UTF-8 database), quoted ones as written. They come from the lexer's tokens because the
 * parse tree already holds truncated names: the lexer cuts identifiers to 63 bytes before the grammar sees them.
 */
export function identifiersOf(statement: string): string[] {
  let tokens;
  try {
    tokens = scanSql(statement).tokens ?? [];
  } catch {
    return [];
  }
  const out: string[] = [];
  for (const t of tokens) {
    if (t.tokenName !== 'IDENT') continue;
    const text = t.text;
    if (text.startsWith('"')) out.push(text.slice(1, -1).split('""').join('"'));
    else if (!(text[1] === '&' && (text[0] === 'u' || text[0] === 'U'))) out.push(foldAscii(text));
  }
  return out;
}

function foldAscii(text: string): string {
  let out = '';
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    out += c >= 65 && c <= 90 ? String.fromCharCode(c + 32) : text[i];
  }
  return out;
}
