// @ts-check
'use strict';
// Embedded PGlite in a worker thread of its own, driven by src/db/pglite-client.ts. Plain CommonJS because it runs
// both under ts-jest and from dist/ (the build compiles .ts only; the client finds this file under src/ either way).
// It executes what the client sends, one message per call; the client does all the serialising (PGlite's own
// mutexes only see one call at a time) and all the bookkeeping, so that ending this thread loses nothing but the
// call in flight.
const { workerData } = require('node:worker_threads');
const { setFlagsFromString } = require('node:v8');
const { PGlite } = require('@electric-sql/pglite');

/**
 * How much WebAssembly a function runs (V8's rough count of bytes executed) before V8 recompiles it with its
 * optimising compiler; V8's default is 1,800,000. PostgreSQL's start in WebAssembly runs thousands of functions just
 * past that default once each (reading the catalogs, setting up the session), and the optimising compiles it then
 * queues cost more CPU than they ever save: measured on this machine (2 cores), PGlite's open took 0.95–1.1 s of the
 * process's CPU with the default and 0.7 s with 100 times it, and a restarted `forge worker` had spent 345 ms less CPU
 * by the time it was running (medians of 10 interleaved starts). Forge's own queries are small; a function that is
 * really hot (a scan over a big table, run again and again) still reaches this budget and is optimised. The flag is
 * the process's, so it holds for any other WebAssembly the process compiles after this (the SQL parser, whose parses
 * are short). Set before the module is compiled, which PGlite.create does.
 */
const WASM_TIERING_BUDGET = 180_000_000;
setFlagsFromString(`--wasm-tiering-budget=${WASM_TIERING_BUDGET}`);
// Never null here: this file only ever runs as the worker thread pglite-client.ts starts.
const parentPort = /** @type {import('node:worker_threads').MessagePort} */ (require('node:worker_threads').parentPort);

/**
 * One call from the client (the `Call` type of pglite-client.ts), with the id its answer carries.
 * @typedef {{ id: number } & (
 *   | { op: 'query', sql: string, params?: unknown[], options?: { rowMode?: 'array' | 'object', rawTypes: number[] } }
 *   | { op: 'exec', sql: string }
 *   | { op: 'close' }
 * )} Call
 */

const identity = (/** @type {unknown} */ value) => value;

/** The fields of PGlite's DatabaseError (PostgreSQL's ErrorResponse) that cross postMessage; its options cannot. */
const ERROR_FIELDS = [
  'severity',
  'code',
  'detail',
  'hint',
  'position',
  'internalPosition',
  'internalQuery',
  'where',
  'schema',
  'table',
  'column',
  'dataType',
  'constraint',
  'file',
  'line',
  'routine',
];

/**
 * @param {unknown} err
 * @returns {Record<string, unknown>}
 */
function errorFields(err) {
  if (!(err instanceof Error)) return { message: String(err) };
  /** @type {Record<string, unknown>} */
  const fields = { message: err.message, name: err.name, stack: err.stack };
  const source = /** @type {Error & Record<string, unknown>} */ (err);
  for (const key of ERROR_FIELDS) if (source[key] !== undefined) fields[key] = source[key];
  return fields;
}

/**
 * @param {import('@electric-sql/pglite').PGlite} pg
 * @param {Call} call
 */
async function run(pg, call) {
  switch (call.op) {
    case 'query': {
      // Drizzle's parsers are identity functions for the types it parses itself; the client checked that and sends
      // their type OIDs.
      const options = call.options && {
        rowMode: call.options.rowMode,
        parsers: Object.fromEntries(call.options.rawTypes.map((/** @type {number} */ oid) => [oid, identity])),
      };
      return pg.query(call.sql, call.params, options);
    }
    case 'exec':
      return pg.exec(call.sql);
    case 'close':
      await pg.close();
      return null;
    default:
      throw new Error(`unknown call ${/** @type {{ op: unknown }} */ (call).op}`);
  }
}

/**
 * PostgreSQL's buffer cache inside the embedded database's WebAssembly memory, which only grows: 128 MB by default,
 * all of it resident once used. Forge's tables and an agent's are small; 16 MB kept the embedded platform's idle
 * memory 124 MB lower (measured 2026-11-28: 300 → 176 MB for an opened database).
 */
const SHARED_BUFFERS = '16MB';

async function main() {
  const pg = await PGlite.create({
    dataDir: workerData.dataDir,
    startParams: [...PGlite.defaultStartParams, '-c', `shared_buffers=${SHARED_BUFFERS}`],
  });
  // Session state (search_path) is re-established on every start: a restarted thread is a new session.
  if (workerData.sessionSql) await pg.exec(workerData.sessionSql);
  pg.onNotification((channel, payload) => parentPort.postMessage({ notification: { channel, payload } }));
  parentPort.on('message', (/** @type {Call} */ call) => {
    run(pg, call).then(
      (result) => {
        try {
          parentPort.postMessage({ id: call.id, result });
        } catch (err) {
          parentPort.postMessage({ id: call.id, error: errorFields(err) }); // a value that cannot be cloned
        }
      },
      (err) => parentPort.postMessage({ id: call.id, error: errorFields(err) }),
    );
  });
  parentPort.postMessage({ ready: true });
}

main().catch((err) => parentPort.postMessage({ startError: errorFields(err) }));
