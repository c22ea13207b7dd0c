/** Thrown when a synchronous policy function is called before the PostgreSQL parser (WASM) has been loaded. */
export class ParserNotLoadedError extends Error {
  override readonly name = 'ParserNotLoadedError';
  constructor() {
    super('the PostgreSQL parser is not loaded yet: await loadPolicyParser() (or use checkMigration) first');
  }
}
