import { loadModule, parseSync, scanSync } from 'libpg-query';
import type { ParseResult, ScanResult } from 'libpg-query';
import { ParserNotLoadedError } from './errors';

let loading: Promise<void> | undefined;
let loaded = false;

/** Loads the PostgreSQL parser (a WASM module) once; later calls return the same promise. */
export function loadPolicyParser(): Promise<void> {
  loading ??= loadModule().then(() => {
    loaded = true;
  });
  return loading;
}

/** True once {@link loadPolicyParser} has resolved, so that the sync API may be used. */
export function isPolicyParserLoaded(): boolean {
  return loaded;
}

function assertLoaded(): void {
  if (!loaded) throw new ParserNotLoadedError();
}

/** Parses with the real PostgreSQL 18 grammar; throws the library's SqlError on a syntax error. */
export function parseSql(sql: string): ParseResult {
  assertLoaded();
  return parseSync(sql);
}

/** Runs PostgreSQL's lexer alone (comments included as tokens); throws when the lexer itself fails. */
export function scanSql(sql: string): ScanResult {
  assertLoaded();
  return scanSync(sql);
}
