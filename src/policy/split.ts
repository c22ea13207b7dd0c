import type { ScanToken } from 'libpg-query';
import { parseSql, scanSql } from './parser';
import { TextIndex } from './text-index';

/** One statement's extent in the migration text, as UTF-16 offsets (end exclusive, the `;` left out). */
export interface StatementSpan {
  start: number;
  end: number;
}

type TokenKind = 'semicolon' | 'open' | 'close' | 'word' | 'comment' | 'other';

interface Token {
  kind: TokenKind;
  start: number;
  end: number;
  /** Lower-cased text of an unquoted word (identifier or keyword), for psql's BEGIN ... END tracking. */
  word?: string;
}

/** Recovery steps before the rest of a text that the lexer cannot read is given up as one unparseable statement. */
const MAX_RECOVERY_STEPS = 2000;
/** Cut points tried when moving past a statement the parser stops at, before giving up on the rest. */
const MAX_CUTS_PER_STEP = 500;

/**
 * Splits SQL into statements the way psql does, over the tokens of PostgreSQL's own lexer: a `;` ends a statement
 * unless it is inside parentheses (CREATE RULE actions) or inside the BEGIN ... END body of CREATE FUNCTION or
 * CREATE PROCEDURE (BEGIN ATOMIC). Comments, dollar quotes, E'' strings and quoted identifiers are tokens of the
 * lexer, so a `;` inside them is never seen as a terminator. Used only when the text does not parse as a whole;
 * each span is then parsed alone so that one bad statement does not hide the verdicts on the others.
 */
export function splitStatements(sql: string): StatementSpan[] {
  const spans: StatementSpan[] = [];
  let start = -1;
  let end = -1;
  let parenDepth = 0;
  let beginDepth = 0;
  const leadWords: string[] = [];
  let wordCount = 0;
  const flush = (): void => {
    if (start >= 0) spans.push({ start, end });
    start = -1;
    end = -1;
    parenDepth = 0;
    beginDepth = 0;
    leadWords.length = 0;
    wordCount = 0;
  };
  for (const token of tokenize(sql)) {
    if (token.kind === 'comment') continue;
    if (token.kind === 'semicolon' && parenDepth === 0 && beginDepth === 0) {
      flush();
      continue;
    }
    if (start < 0) start = token.start;
    end = token.end;
    if (token.kind === 'open') parenDepth++;
    else if (token.kind === 'close' && parenDepth > 0) parenDepth--;
    else if (token.kind === 'word' && token.word !== undefined) {
      // psql's heuristic (psqlscan.l): inside CREATE [OR REPLACE] FUNCTION|PROCEDURE, count BEGIN/CASE ... END.
      if (wordCount < 4) leadWords.push(token.word);
      wordCount++;
      if (parenDepth === 0 && isRoutineDefinition(leadWords)) {
        if (token.word === 'begin') beginDepth++;
        else if (token.word === 'case' && beginDepth > 0) beginDepth++;
        else if (token.word === 'end' && beginDepth > 0) beginDepth--;
      }
    }
  }
  flush();
  return spans;
}

function isRoutineDefinition(words: string[]): boolean {
  if (words[0] !== 'create') return false;
  if (words[1] === 'function' || words[1] === 'procedure') return true;
  return words[1] === 'or' && words[2] === 'replace' && (words[3] === 'function' || words[3] === 'procedure');
}

/**
 * Tokens of the whole text. libpg_query's scanner is all-or-nothing, so when the lexer fails somewhere (an
 * unterminated quote or comment, trailing junk after a number) the tokens before the failure are recovered from
 * the parser's error position, and what cannot be lexed becomes one opaque token up to the end: PostgreSQL would
 * swallow the rest of an unterminated literal the same way.
 */
function tokenize(sql: string): Token[] {
  const whole = tryScan(sql, 0);
  if (whole) return whole;
  const out: Token[] = [];
  let pos = 0;
  for (let step = 0; pos < sql.length; step++) {
    const rest = sql.slice(pos);
    const scanned = step === 0 ? undefined : tryScan(rest, pos);
    if (scanned) {
      out.push(...scanned);
      return out;
    }
    if (step >= MAX_RECOVERY_STEPS) break;
    const failure = parseFailure(rest);
    if (failure && failure.cursor > 0 && failure.cursor < rest.length) {
      const head = tryScan(rest.slice(0, failure.cursor), pos);
      if (head) {
        out.push(...head);
        pos += failure.cursor;
        if (failure.lexical) break;
        continue;
      }
    }
    if (failure?.lexical && failure.cursor === 0) break;
    // The parser stopped at the first token of `rest`: move on by the shortest prefix that lexes.
    const prefix = scanShortPrefix(rest, pos);
    if (!prefix) break;
    out.push(...prefix.tokens);
    pos += prefix.length;
  }
  if (pos < sql.length) out.push({ kind: 'other', start: pos, end: sql.length });
  return out;
}

/**
 * Tokens of the shortest prefix of `text` that ends after a `;` or a newline and lexes on its own. A cut inside a
 * literal or block comment leaves it unterminated and fails; a cut after a `;` inside a `--` comment would lex but
 * split the comment, so it is skipped.
 */
function scanShortPrefix(text: string, base: number): { tokens: Token[]; length: number } | undefined {
  let tries = 0;
  for (let i = 0; i < text.length && tries < MAX_CUTS_PER_STEP; i++) {
    const c = text.charCodeAt(i);
    if (c !== 59 && c !== 10) continue;
    tries++;
    const tokens = tryScan(text.slice(0, i + 1), base);
    if (!tokens || tokens.length === 0) continue;
    if (c === 59 && tokens[tokens.length - 1].kind === 'comment') continue;
    return { tokens, length: i + 1 };
  }
  return undefined;
}

interface ParseFailure {
  /** UTF-16 offset of the error in the text handed to the parser. */
  cursor: number;
  /** True for the lexer's own errors (unterminated literal, ...), false for grammar errors. */
  lexical: boolean;
}

function parseFailure(text: string): ParseFailure | undefined {
  try {
    parseSql(text);
    return undefined;
  } catch (err) {
    const details = (err as { sqlDetails?: { cursorPosition?: number; fileName?: string; message?: string } }).sqlDetails;
    if (!details || typeof details.cursorPosition !== 'number' || details.cursorPosition < 0) return undefined;
    const message = details.message ?? '';
    return {
      cursor: Math.min(details.cursorPosition, text.length),
      lexical: details.fileName === 'scan.l' && !message.startsWith('syntax error'),
    };
  }
}

function tryScan(text: string, base: number): Token[] | undefined {
  let tokens: ScanToken[];
  try {
    tokens = scanSql(text).tokens ?? [];
  } catch {
    return undefined;
  }
  const index = new TextIndex(text);
  return tokens.map((t) => toToken(t, index, base));
}

function toToken(t: ScanToken, index: TextIndex, base: number): Token {
  const start = base + index.charOffset(t.start);
  const end = base + index.charOffset(t.end);
  return { kind: tokenKind(t), start, end, word: isWord(t) ? t.text.toLowerCase() : undefined };
}

function tokenKind(t: ScanToken): TokenKind {
  if (t.tokenName === 'C_COMMENT' || t.tokenName === 'SQL_COMMENT') return 'comment';
  if (t.text === ';') return 'semicolon';
  if (t.text === '(') return 'open';
  if (t.text === ')') return 'close';
  return isWord(t) ? 'word' : 'other';
}

/** An unquoted identifier or a keyword: what psql's lexer calls an identifier. */
function isWord(t: ScanToken): boolean {
  if (t.keywordName !== undefined && t.keywordName !== 'NO_KEYWORD') return true;
  return t.tokenName === 'IDENT' && t.text[0] !== '"' && !(t.text[1] === '&' && (t.text[0] === 'u' || t.text[0] === 'U'));
}
