import { checkMigrationSync, loadPolicyParser } from '../../src/policy';
import type { PolicyReport } from '../../src/policy';
import type { AttackClass, MustReject } from './redteam/corpus';
import { legitimate, mustReject } from './redteam/corpus';
import { FIXTURE_CORE_TABLES } from './redteam/core-fixture';

/**
 * Runs the red-team corpus (test/policy/redteam/corpus.ts) through the judge: every must-reject migration is refused
 * with a message an agent can act on (naming the rule, and the offending function or object when the case is about
 * one), and every legitimate migration is accepted. The differential test applies the same corpus to PostgreSQL.
 */

/** Every AttackClass, spelled out so that a new class added to the corpus fails to compile here until covered. */
const ATTACK_CLASSES: Record<AttackClass, true> = {
  'side-effect-function': true,
  'side-door-object': true,
  'forge-own-table': true,
  'core-data-reach': true,
  'text-limits': true,
  'system-catalog': true,
  classic: true,
  'raises-later': true,
  'write-cost': true,
  exhaustion: true,
  'core-lock': true,
  'catalog-reader': true,
};

/** One refusal of a report: the migration-wide problem, or a refused statement. */
interface Refusal {
  rule?: string;
  message?: string;
  statement?: number;
  text?: string;
}

function refusals(report: PolicyReport): Refusal[] {
  const out: Refusal[] = [];
  if (report.problem) out.push({ rule: report.problem.rule, message: report.problem.message });
  for (const s of report.statements) {
    if (!s.accepted) out.push({ rule: s.rule, message: s.message, statement: s.index, text: short(s.text) });
  }
  return out;
}

/** A piece of SQL short enough for a test name or a failure message. */
function short(text: string, max = 160): string {
  const flat = text.split('\u0000').join('\\0').replace(/\s+/g, ' ').trim();
  return flat.length <= max ? flat : `${flat.slice(0, max)}... (${text.length} chars)`;
}

/** What a stack trace or an internal error looks like in a message meant for an agent. */
const INTERNAL = /\n\s+at |RangeError|Maximum call stack|TypeError|undefined is not|\[object Object\]/;

function label(c: MustReject, i: number): string {
  return `#${i} [${c.class}] ${c.why}${c.rule ? ` (${c.rule})` : ''}`;
}

beforeAll(async () => {
  await loadPolicyParser();
});

describe('red-team corpus', () => {
  test('has at least 150 must-reject and 40 legitimate migrations', () => {
    expect(mustReject.length).toBeGreaterThanOrEqual(150);
    expect(legitimate.length).toBeGreaterThanOrEqual(40);
  });

  test('covers every attack class, and only known classes', () => {
    const seen = new Set(mustReject.map((c) => c.class));
    const known = Object.keys(ATTACK_CLASSES).sort();
    expect([...seen].sort()).toEqual(known);
  });

  test('every case says why', () => {
    const silent = [...mustReject, ...legitimate].filter((c) => c.why.trim() === '').map((c) => short(c.sql));
    expect(silent).toEqual([]);
  });
});

describe('must-reject migrations are refused', () => {
  test.each(mustReject.map((c, i) => [label(c, i), c] as const))('%s', (_name, c) => {
    const report = checkMigrationSync(c.sql, { coreTables: FIXTURE_CORE_TABLES });
    const refused = refusals(report);
    // On a bypass, show what each statement was accepted as.
    const verdict = report.accepted
      ? { accepted: true, statements: report.statements.map((s) => `${s.index}: ${s.rule} (${short(s.text, 80)})`) }
      : { accepted: false };
    expect(verdict).toEqual({ accepted: false });
    expect(refused.length).toBeGreaterThan(0);
    for (const r of refused) {
      expect(typeof r.message).toBe('string');
      expect((r.message ?? '').trim().length).toBeGreaterThan(0);
      expect(r.message ?? '').not.toMatch(INTERNAL);
    }
    if (c.rule !== undefined) {
      expect(refused.map((r) => r.rule)).toContain(c.rule);
    }
    if (c.names !== undefined) {
      const wanted = c.names.toLowerCase();
      const relevant = c.rule === undefined ? refused : refused.filter((r) => r.rule === c.rule);
      const named = relevant.some((r) => (r.message ?? '').toLowerCase().includes(wanted));
      expect({ names: c.names, named, messages: relevant.map((r) => r.message) }).toMatchObject({ named: true });
    }
  });
});

describe('legitimate migrations are accepted', () => {
  test.each(legitimate.map((c, i) => [`#${i} ${c.why}`, c] as const))('%s', (_name, c) => {
    const report = checkMigrationSync(c.sql, { coreTables: FIXTURE_CORE_TABLES });
    // On a false rejection, the refused statements with their rule and message are the diff.
    expect(refusals(report)).toEqual([]);
    expect(report.accepted).toBe(true);
  });
});
