import { MAX_MIGRATION_BYTES, MAX_MIGRATION_STATEMENTS } from '../contract/limits';
import { capVerdicts } from './core-caps';
import { indexWidthVerdicts } from './core-index-width';
import { namedLaterVerdicts } from './lock-plan';
import { judgeStatement, nodeKind } from './judge-statement';
import { identifierBytes, MAX_IDENTIFIER_BYTES, showIdent, truncateIdentifier } from './names';
import { loadPolicyParser } from './parser';
import type { RawStatement } from './read-statements';
import { readStatements } from './read-statements';
import { TextIndex } from './text-index';
import { identifiersOf } from './identifiers';
import type { TreeFacts } from './tree-rules';
import { checkTree, tooDeep } from './tree-rules';
import type { MigrationProblem, PolicyOptions, PolicyReport, StatementLocation, StatementVerdict } from './types';
import { invalidUtf8Offset, loneSurrogateOffset, utf8OffsetOf } from './utf8';
import type { RuleContext, Verdict } from './verdict';
import { reject } from './verdict';

/** What the tree walk and the lexer found in one parsed statement. */
interface StatementFacts extends TreeFacts {
  identifiers: string[];
}

/**
 * Judges a migration against SCHEMA_POLICY.md with the real PostgreSQL parser. Loads the parser on first use;
 * never throws for any input text: a statement that does not parse gets a `parse-error` rejection. Given bytes (a
 * file as read), text that is not valid UTF-8 is refused (`invalid-utf8`, naming the byte offset) before parsing.
 */
export async function checkMigration(sql: string | Uint8Array, opts: PolicyOptions = {}): Promise<PolicyReport> {
  await loadPolicyParser();
  return checkMigrationSync(sql, opts);
}

/**
 * Synchronous {@link checkMigration}, for callers that have awaited `loadPolicyParser()` once.
 * @throws ParserNotLoadedError when the parser has not been loaded yet.
 */
export function checkMigrationSync(input: string | Uint8Array, opts: PolicyOptions = {}): PolicyReport {
  const ctx: RuleContext = { schema: opts.schema ?? 'public', coreTables: opts.coreTables };
  const decoded = typeof input === 'string' ? { sql: input } : decodeMigration(input);
  if ('problem' in decoded) return { accepted: false, statements: [], problem: decoded.problem };
  const { sql } = decoded;
  const index = new TextIndex(sql);
  const textProblem = checkText(sql, index);
  if (textProblem) return { accepted: false, statements: [], problem: textProblem };
  const raws = readStatements(sql);
  if (raws.length > MAX_MIGRATION_STATEMENTS) {
    return {
      accepted: false,
      statements: [],
      problem: {
        rule: 'too-many-statements',
        message:
          `The migration holds ${raws.length} statements; at most ${MAX_MIGRATION_STATEMENTS} are judged and run ` +
          'in one transaction. Split it into several migrations.',
      },
    };
  }
  return judgeStatements(sql, raws, ctx, index);
}

/**
 * A migration file's text, or the `invalid-utf8` problem when its bytes are not UTF-8 (the location is that of the
 * first bad byte in the text as a lenient decoder reads it).
 */
export function decodeMigration(bytes: Uint8Array): { sql: string } | { problem: MigrationProblem } {
  const bad = invalidUtf8Offset(bytes);
  if (bad === undefined) return { sql: Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('utf8') };
  const before = Buffer.from(bytes.buffer, bytes.byteOffset, bad).toString('utf8');
  const lenient = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('utf8');
  return { problem: invalidUtf8(bad, new TextIndex(lenient).location(before.length), `byte 0x${bytes[bad].toString(16).padStart(2, '0')}`) };
}

function invalidUtf8(byteOffset: number, at: StatementLocation, what: string): MigrationProblem {
  return {
    rule: 'invalid-utf8',
    message:
      `The migration is not valid UTF-8: ${what} at byte ${byteOffset} (line ${at.line}, column ${at.column}) ` +
      'begins no well-formed character. PostgreSQL refuses such text, and the judge would read something else in ' +
      'its place. Save the file as UTF-8 (or remove the character).',
    location: at,
  };
}

/**
 * The verdict on every statement of a migration, whatever its length: {@link checkMigrationSync} without the
 * statement limit, for tests that run whole PostgreSQL regression files through the rules.
 */
export function judgeEveryStatement(sql: string, opts: PolicyOptions = {}): PolicyReport {
  return judgeStatements(sql, readStatements(sql), { schema: opts.schema ?? 'public', coreTables: opts.coreTables }, new TextIndex(sql));
}

function judgeStatements(sql: string, raws: RawStatement[], ctx: RuleContext, index: TextIndex): PolicyReport {
  const facts = raws.map((raw): StatementFacts | undefined =>
    raw.node ? { ...checkTree(raw.node, ctx), identifiers: identifiersOf(sql.slice(raw.start, raw.end)) } : undefined,
  );
  const truncated = truncationMap(facts);
  const caps = capVerdicts(
    raws.map((raw) => raw.node),
    ctx.coreTables,
  );
  const widths = indexWidthVerdicts(
    raws.map((raw) => raw.node),
    ctx.coreTables,
  );
  const namedLater = namedLaterVerdicts(sql, raws);
  const statements = raws.map((raw, i): StatementVerdict => {
    const judged = judge(raw, facts[i], truncated, ctx, index);
    const verdict = judged.accepted ? (caps[i] ?? widths[i] ?? namedLater[i] ?? judged) : judged;
    return {
      index: i,
      kind: raw.node ? nodeKind(raw.node) : 'ParseError',
      accepted: verdict.accepted,
      rule: verdict.rule,
      message: verdict.message,
      text: sql.slice(raw.start, raw.end),
      location: index.location(raw.start),
    };
  });
  // An empty migration does nothing that could be recorded: refuse it rather than apply nothing.
  return { accepted: statements.length > 0 && statements.every((s) => s.accepted), statements };
}

function judge(raw: RawStatement, facts: StatementFacts | undefined, truncated: Map<string, Set<string>>, ctx: RuleContext, index: TextIndex): Verdict {
  if (raw.tooDeep) return tooDeep();
  if (!raw.node || !facts) {
    const at = raw.errorOffset === undefined ? '' : ` (line ${index.location(raw.errorOffset).line}, column ${index.location(raw.errorOffset).column})`;
    return reject(
      'parse-error',
      `PostgreSQL cannot parse this statement: ${raw.error ?? 'syntax error'}${at}. Fix the SQL; nothing of the ` +
        'migration runs while one statement is invalid.',
    );
  }
  const verdict = judgeStatement(raw.node, ctx);
  // What the statement calls or names decides before the shape of an accepted kind: `nextval('orders_id_seq')` in
  // an index is refused for the sequence it advances, not for being constant.
  if (!verdict.accepted && !(facts.problem && verdict.rule.startsWith('core-'))) return verdict;
  if (facts.problem) return facts.problem;
  return identifierProblem(facts.identifiers, truncated) ?? verdict;
}

/**
 * What is refused before the parser reads anything: a lone surrogate (text with no UTF-8 form), a NUL byte (the parser's C strings end there, so it would judge
 * a prefix while PostgreSQL gets the whole text), and text past the size limit.
 */
function checkText(sql: string, index: TextIndex): MigrationProblem | undefined {
  const lone = loneSurrogateOffset(sql);
  if (lone !== undefined) {
    const unit = `U+${sql.charCodeAt(lone).toString(16).toUpperCase()}`;
    return invalidUtf8(utf8OffsetOf(sql, lone), index.location(lone), `a lone surrogate (${unit}, half of a pair)`);
  }
  const nul = sql.indexOf('\u0000');
  if (nul >= 0) {
    const at = index.location(nul);
    return {
      rule: 'nul-byte',
      message:
        `The migration holds a NUL byte (line ${at.line}, column ${at.column}). PostgreSQL accepts no NUL in SQL ` +
        'text, and a judge reading up to it would see only part of the migration. Remove it.',
      location: at,
    };
  }
  const bytes = Buffer.byteLength(sql, 'utf8');
  if (bytes > MAX_MIGRATION_BYTES) {
    return {
      rule: 'too-large',
      message:
        `The migration is ${bytes} bytes; at most ${MAX_MIGRATION_BYTES} (1 MiB) of SQL is judged and run as one. ` + 'Split it into several migrations.',
    };
  }
  return undefined;
}

/** Truncated form of every identifier written in the migration → the distinct identifiers that become it. */
function truncationMap(facts: (StatementFacts | undefined)[]): Map<string, Set<string>> {
  const map = new Map<string, Set<string>>();
  for (const f of facts) {
    for (const name of f?.identifiers ?? []) {
      const key = truncateIdentifier(name);
      let set = map.get(key);
      if (!set) map.set(key, (set = new Set()));
      set.add(name);
    }
  }
  return map;
}

function identifierProblem(identifiers: string[], truncated: Map<string, Set<string>>): Verdict | undefined {
  for (const name of identifiers) {
    const bytes = identifierBytes(name);
    if (bytes <= MAX_IDENTIFIER_BYTES) continue;
    const short = truncateIdentifier(name);
    const others = [...(truncated.get(short) ?? [])].filter((n) => n !== name);
    if (others.length > 0) {
      return reject(
        'identifier-truncation-collision',
        `Identifier ${showIdent(name)} is ${bytes} bytes; PostgreSQL truncates names to ${MAX_IDENTIFIER_BYTES} ` +
          `bytes, which makes it ${showIdent(short)}, the same name as ${showIdent(others[0])} in this migration. ` +
          `Use distinct names of at most ${MAX_IDENTIFIER_BYTES} bytes.`,
      );
    }
    return reject(
      'identifier-too-long',
      `Identifier ${showIdent(name)} is ${bytes} bytes; PostgreSQL silently truncates names to ` +
        `${MAX_IDENTIFIER_BYTES} bytes (to ${showIdent(short)}). Use a name of at most ${MAX_IDENTIFIER_BYTES} bytes.`,
    );
  }
  return undefined;
}
