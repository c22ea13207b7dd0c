/**
 * The application's write load for the core-index bench (bench/core-index.ts), in a thread of its own so that nothing
 * the bench's main thread does (the workers' activities, the client, GC) delays its clock: an open loop of INSERTs and
 * a few UPDATEs on one core table at a fixed rate, on connections of its own, as the application's role.
 *
 * Open loop: each write has a scheduled time, one every 1/rate s, and its latency is counted from that time, not from
 * when a connection took it. A write held behind a lock therefore also delays every write scheduled after it, and
 * those are counted as the application would feel them (a closed loop would record one long sample per connection
 * and call the rest of the blocked seconds "no writes").
 *
 * workerData: {@link WriterOptions}. Posts `{ kind: 'ready', role, superuser }` once connected, and on the message
 * `'stop'` stops scheduling, waits for the writes in flight and posts `{ kind: 'done', samples, errors }`: samples
 * as flat triples (scheduled time in ms since the epoch, latency in ms, 1 for an UPDATE).
 */
import { parentPort, workerData } from 'node:worker_threads';
import { Pool } from 'pg';

export interface WriterOptions {
  /** The application's connection URL (its own role). */
  url: string;
  /** The core table, schema-qualified and quoted. */
  table: string;
  /** Writes per second. */
  rate: number;
  /** Connections the application's pool keeps. */
  connections: number;
  /** Every n-th write is an UPDATE of a random existing row; the rest are INSERTs. */
  updateEvery: number;
  /** Rows ids 1..maxId exist (what the UPDATEs pick from). */
  maxId: number;
}

export type WriterMessage =
  { kind: 'ready'; role: string; superuser: boolean } | { kind: 'done'; samples: Float64Array; errors: string[] } | { kind: 'failed'; message: string };

/** Wall-clock milliseconds since the epoch, at high resolution, comparable across threads. */
export const nowMs = (): number => performance.timeOrigin + performance.now();

async function main(options: WriterOptions): Promise<void> {
  const port = parentPort!;
  const pool = new Pool({ connectionString: options.url, max: options.connections });
  pool.on('error', () => undefined);
  // Open every connection before the clock starts, so that no connect lands in a measured window.
  const clients = await Promise.all(Array.from({ length: options.connections }, () => pool.connect()));
  const [{ role, superuser }] = (
    await clients[0].query<{ role: string; superuser: boolean }>(
      'SELECT current_user AS role, rolsuper AS superuser FROM pg_roles WHERE rolname = current_user',
    )
  ).rows;
  for (const c of clients) c.release();
  port.postMessage({ kind: 'ready', role, superuser } satisfies WriterMessage);

  const insert = `INSERT INTO ${options.table} (customer_id, status, total_cents) VALUES ($1, 'new', $2)`;
  const update = `UPDATE ${options.table} SET status = 'paid' WHERE id = $1`;
  const samples: number[] = [];
  const errors: string[] = [];
  const inFlight = new Set<Promise<void>>();
  const interval = 1000 / options.rate;
  let stopping = false;
  let n = 0;
  let next = nowMs();

  const write = (scheduled: number): void => {
    const isUpdate = ++n % options.updateEvery === 0;
    const query = isUpdate
      ? pool.query(update, [1 + Math.floor(Math.random() * options.maxId)])
      : pool.query(insert, [1 + Math.floor(Math.random() * 100_000), Math.floor(Math.random() * 100_000)]);
    const done: Promise<void> = query
      .then(
        () => {
          samples.push(scheduled, nowMs() - scheduled, isUpdate ? 1 : 0);
        },
        (err: unknown) => {
          samples.push(scheduled, nowMs() - scheduled, isUpdate ? 1 : 0);
          if (errors.length < 20) errors.push(err instanceof Error ? err.message : String(err));
        },
      )
      .finally(() => inFlight.delete(done));
    inFlight.add(done);
  };
  const tick = (): void => {
    if (stopping) return;
    const t = nowMs();
    while (next <= t) {
      write(next);
      next += interval;
    }
    setTimeout(tick, Math.max(0, next - nowMs()));
  };
  tick();

  port.on('message', (message: unknown) => {
    if (message !== 'stop') return;
    stopping = true;
    void (async () => {
      while (inFlight.size > 0) await Promise.all([...inFlight]);
      await pool.end();
      const flat = Float64Array.from(samples);
      port.postMessage({ kind: 'done', samples: flat, errors } satisfies WriterMessage, [flat.buffer]);
    })();
  });
}

if (parentPort) {
  main(workerData as WriterOptions).catch((err: unknown) => {
    parentPort!.postMessage({ kind: 'failed', message: err instanceof Error ? err.message : String(err) } satisfies WriterMessage);
  });
}
