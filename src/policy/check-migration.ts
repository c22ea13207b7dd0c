import { judgeStatement, nodeKind } from './judge-statement';
import { identifierBytes, MAX_IDENTIFIER_BYTES, showIdent, truncateIdentifier } from './names';
import { loadPolicyParser } from './parser';
import type { RawStatement } from './read-statements';
import { readStatements } from './read-statements';
import { TextIndex } from './text-index';
import { identifiersOf } from './identifiers';
import type { TreeFacts } from './foreign-schema';
import { findForeignSchema } from './foreign-schema';
import type { PolicyOptions, PolicyReport, StatementVerdict } from './types';
import type { RuleContext, Verdict } from './verdict';
import { reject } from './verdict';

/** What the tree walk and the lexer found in one parsed statement. */
interface StatementFacts extends TreeFacts {
  identifiers: string[];
}

/**
 * Judges a migration against SCHEMA_POLICY.md with the real PostgreSQL parser. Loads the parser on first use;
 * never throws for any input text: a statement that does not parse gets a `parse-error` rejection.
 */
export async function checkMigration(sql: string, opts: PolicyOptions = {}): Promise<PolicyReport> {
  await loadPolicyParser();
  return checkMigrationSync(sql, opts);
}

/**
 * Synchronous {@link checkMigration}, for callers that have awaited `loadPolicyParser()` once.
 * @throws ParserNotLoadedError when the parser has not been loaded yet.
 */
export function checkMigrationSync(sql: string, opts: PolicyOptions = {}): PolicyReport {
  const ctx: RuleContext = { schema: opts.schema ?? 'public' };
  const index = new TextIndex(sql);
  const raws = readStatements(sql);
  const facts = raws.map((raw): StatementFacts | undefined =>
    raw.node
      ? { ...findForeignSchema(raw.node, ctx), identifiers: identifiersOf(sql.slice(raw.start, raw.end)) }
      : undefined,
  );
  const truncated = truncationMap(facts);
  const statements = raws.map((raw, i): StatementVerdict => {
    const verdict = judge(raw, facts[i], truncated, ctx, index);
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

function judge(
  raw: RawStatement,
  facts: StatementFacts | undefined,
  truncated: Map<string, Set<string>>,
  ctx: RuleContext,
  index: TextIndex,
): Verdict {
  if (!raw.node || !facts) {
    const at = raw.errorOffset === undefined ? '' : ` (line ${index.location(raw.errorOffset).line}, column ${index.location(raw.errorOffset).column})`;
    return reject(
      'parse-error',
      `PostgreSQL cannot parse this statement: ${raw.error ?? 'syntax error'}${at}. Fix the SQL; nothing of the ` +
        'migration runs while one statement is invalid.',
    );
  }
  const verdict = judgeStatement(raw.node, ctx);
  if (!verdict.accepted) return verdict;
  if (facts.foreignSchema) return facts.foreignSchema;
  return identifierProblem(facts.identifiers, truncated) ?? verdict;
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
