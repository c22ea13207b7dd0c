import type { PgDatabase, PgQueryResultHKT } from 'drizzle-orm/pg-core';
import type * as schema from './schema';

/** The drizzle database over either backend; queries written against it run on PGlite and PostgreSQL alike. */
export type ForgeDb = PgDatabase<PgQueryResultHKT, typeof schema>;

/** A transaction handed to `ForgeDb.transaction` callbacks. */
export type ForgeTx = Parameters<Parameters<ForgeDb['transaction']>[0]>[0];

/** Called with the payload of each notification on a channel. */
export type NotificationListener = (payload: string) => void;

/**
 * An open database: the drizzle handle plus what the two backends do differently (closing, LISTEN/NOTIFY).
 * With PGlite only one process may hold this (the worker); everything else reaches state through Temporal.
 */
export interface ForgeDatabase {
  db: ForgeDb;
  kind: 'pglite' | 'postgres';
  /** The schema Forge's tables live in (FORGE_SCHEMA). */
  schema: string;
  /** Closes the pool / the embedded instance and every listener. Idempotent. */
  close(): Promise<void>;
  /**
   * Subscribes to a channel (a lowercase identifier). Resolves once LISTEN is in effect; the returned function
   * unsubscribes. Delivery is at most once: on PostgreSQL a dropped listener connection reconnects, but
   * notifications sent while it was down are lost, so consumers should also re-read state in `onListenerReconnect`.
   */
  listen(channel: string, listener: NotificationListener): Promise<() => Promise<void>>;
  /** Called after the PostgreSQL listener connection was lost and re-established (never on PGlite). */
  onListenerReconnect(callback: () => void): () => void;
  /** Sends a notification outside any transaction (inside one, use `pg_notify` in the transaction). */
  notify(channel: string, payload: string): Promise<void>;
  /**
   * Runs `statement` (queries on this database or one of its transactions) under a wall-clock bound of `ms` per
   * query. PostgreSQL enforces `statement_timeout` itself, so there this only runs it. Embedded PGlite ignores that
   * setting: a query still running at the bound is cancelled by ending the database's thread and reopening it (crash
   * recovery discards the open transaction); an in-memory PGlite would lose everything that way, so there the query
   * runs to its end and fails afterwards.
   * @throws StatementBoundError (PGlite) when the bound was passed; the transaction does not commit.
   */
  boundStatement<T>(ms: number, statement: () => Promise<T>): Promise<T>;
  /**
   * Runs `work` on a database session that nothing after it shares, so no setting, lock, prepared statement or
   * temporary object of it outlives `work` (SCHEMA_POLICY.md "How it runs"). PostgreSQL: a connection of its own,
   * closed afterwards. PGlite has one session: it is reset afterwards as DISCARD ALL does, except that its LISTENs
   * stay (the registries' notifications use them), and Forge's own session settings are applied again.
   */
  isolatedSession<T>(work: (db: ForgeDb) => Promise<T>): Promise<T>;
}
