// @ts-check
'use strict';
// Embedded PGlite in a worker thread of its own, driven by src/db/pglite-client.ts. Plain CommonJS because it runs
// both under ts-jest and from dist/ (the build compiles .ts only; the client finds this file under src/ either way).
// It executes what the client sends, one message per call; the client does all the serialising (PGlite's own
// mutexes only see one call at a time) and all the bookkeeping, so that ending this thread loses nothing but the
// call in flight.
const { workerData } = require('node:worker_threads');
const { PGlite } = require('@electric-sql/pglite');
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
