/**
 * The functions and operators an expression on a core table may use (SCHEMA_POLICY.md "Round three"): each is
 * *total* for every argument type PostgreSQL could resolve it to (it cannot raise, whatever the row holds) and costs
 * at most linear time in its arguments. An index expression or predicate on a core table, and a CHECK on an agent
 * column of one, run on every write of the application's; a function that can raise there (a division, a failing
 * cast, `sqrt` of a negative, `date_trunc('year', ...)` at the end of the timestamp range) fails the application's
 * write, and one whose cost an argument chooses (`repeat`, `lpad`, a regular expression) stalls it.
 *
 * This list is the one place the judge reads them from; test/policy/total-functions.test.ts proves each entry on a
 * real PostgreSQL: it finds every pg_catalog overload of the name and arity (each must be in `overloads`) and
 * evaluates every overload on the edge values of its argument types (NULL, empty, extreme numbers, dates at the ends
 * of their ranges, long and invalid-looking strings) without an error. Add an entry only with its overloads, and run
 * that test.
 */

/** How the judge requires an argument to be written. */
export type TotalArgument =
  /** Any allowed expression (a column, a literal, another total call). */
  | { kind: 'expression' }
  /** A string literal, one of `values` (date_trunc's unit: some units raise at the ends of the ranges). */
  | { kind: 'textLiteral'; values: readonly string[] }
  /** An integer literal (left's and right's count: a computed count could be anything). */
  | { kind: 'integerLiteral' };

export interface TotalFunction {
  name: string;
  args: readonly TotalArgument[];
  /**
   * Every immutable pg_catalog overload of this name with this many arguments, by argument type (pg_type.typname).
   * Only immutable ones can run on a core table's writes: PostgreSQL refuses any other in an index expression or
   * predicate, and the judge refuses a function with any non-immutable overload in a CHECK on a core table.
   */
  overloads: readonly (readonly string[])[];
}

const expression: TotalArgument = { kind: 'expression' };

/**
 * Units date_trunc takes without ever raising. Coarser units are not total: `week` is refused for an interval,
 * and `month` and coarser overflow on the first timestamps of the range (4714 BC).
 */
export const TOTAL_DATE_TRUNC_UNITS = ['microseconds', 'milliseconds', 'second', 'minute', 'hour', 'day'] as const;

export const TOTAL_FUNCTIONS: readonly TotalFunction[] = [
  { name: 'lower', args: [expression], overloads: [['text'], ['anyrange'], ['anymultirange']] },
  { name: 'upper', args: [expression], overloads: [['text'], ['anyrange'], ['anymultirange']] },
  { name: 'initcap', args: [expression], overloads: [['text']] },
  { name: 'btrim', args: [expression], overloads: [['text']] },
  { name: 'ltrim', args: [expression], overloads: [['text']] },
  { name: 'rtrim', args: [expression], overloads: [['text']] },
  { name: 'char_length', args: [expression], overloads: [['text'], ['bpchar']] },
  { name: 'character_length', args: [expression], overloads: [['text'], ['bpchar']] },
  { name: 'octet_length', args: [expression], overloads: [['text'], ['bpchar'], ['bytea'], ['bit']] },
  { name: 'left', args: [expression, { kind: 'integerLiteral' }], overloads: [['text', 'int4']] },
  { name: 'right', args: [expression, { kind: 'integerLiteral' }], overloads: [['text', 'int4']] },
  {
    name: 'date_trunc',
    args: [{ kind: 'textLiteral', values: TOTAL_DATE_TRUNC_UNITS }, expression],
    // date_trunc(text, timestamptz) is stable (and raises for 'day' at 4714 BC in zones west of UTC): PostgreSQL
    // refuses it in an index, and the judge refuses non-immutable names in a core CHECK.
    overloads: [
      ['text', 'timestamp'],
      ['text', 'interval'],
    ],
  },
  {
    // `x AT TIME ZONE 'UTC'`: total for UTC only (other zones overflow at the ends of the range, and an unknown
    // name raises). A string literal resolves to the text overloads (the interval ones are never chosen); the timetz
    // one is volatile (it reads today's date for the offset).
    name: 'timezone',
    args: [{ kind: 'textLiteral', values: ['UTC'] }, expression],
    overloads: [
      ['text', 'timestamp'],
      ['text', 'timestamptz'],
    ],
  },
  { name: 'jsonb_typeof', args: [expression], overloads: [['jsonb']] },
  { name: 'json_typeof', args: [expression], overloads: [['json']] },
];

/**
 * Binary operators an expression on a core table may use. Comparisons are total on PostgreSQL's scalar types (the
 * test compares the edge values of each, and across the date/time types); `->` and `->>` only with a literal on the
 * right (a key or an index), and they answer NULL for what is not there.
 */
export const TOTAL_OPERATORS: Readonly<Record<string, { literalRight: boolean }>> = {
  '=': { literalRight: false },
  '<>': { literalRight: false },
  '!=': { literalRight: false },
  '<': { literalRight: false },
  '<=': { literalRight: false },
  '>': { literalRight: false },
  '>=': { literalRight: false },
  '->': { literalRight: true },
  '->>': { literalRight: true },
};

/** The entry for a call of `name` with `arity` arguments, if the call may appear in a core-table expression. */
export function totalFunction(name: string, arity: number): TotalFunction | undefined {
  return TOTAL_FUNCTIONS.find((f) => f.name === name && f.args.length === arity);
}

/** The names of the list, for messages: `lower, upper, ...`. */
export function totalFunctionNames(): string {
  return [...new Set(TOTAL_FUNCTIONS.map((f) => f.name))].join(', ');
}
