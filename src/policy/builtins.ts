import builtins from './data/pg-builtins.json';

/**
 * What PostgreSQL's own catalogue says of its built-in functions and operators, as scripts/generate-pg-builtins.mjs
 * read it (pg_proc volatility and parallel safety, and a deny list of known actors). Checked in as data; a test runs
 * the script with --check so that the file and the script never drift apart.
 */
const allowedFunctions: ReadonlySet<string> = new Set(builtins.functions);
const immutableFunctions: ReadonlySet<string> = new Set(builtins.immutableFunctions);
const refusedFunctions: Readonly<Record<string, string>> = builtins.refusedFunctions;
const allowedOperators: ReadonlySet<string> = new Set(builtins.operators);

/** Why a built-in function name is refused: the catalogue's word for it, or `unknown` when no built-in has the name. */
export type RefusalReason = 'volatile' | 'parallel-unsafe' | 'parallel-restricted' | 'deny-list' | 'reads' | 'unknown';

/** True when every pg_catalog function of this (folded) name is free of side effects, or acts only as a value. */
export function isAllowedFunction(name: string): boolean {
  return allowedFunctions.has(name);
}

/** True when every pg_catalog function of this name is immutable: what a CHECK on a core table may call. */
export function isImmutableFunction(name: string): boolean {
  return immutableFunctions.has(name);
}

/** True for a built-in function name the allowlist refuses (so `t.setval`, functional notation, is a call too). */
export function isRefusedBuiltin(name: string): boolean {
  return Object.hasOwn(refusedFunctions, name);
}

/** Why a function name is not allowed. */
export function refusalReason(name: string): RefusalReason {
  return (Object.hasOwn(refusedFunctions, name) ? refusedFunctions[name] : 'unknown') as RefusalReason;
}

/** True when every pg_catalog operator with this symbol calls an allowed function. */
export function isAllowedOperator(symbol: string): boolean {
  return allowedOperators.has(symbol);
}
