import { sql, type SQL } from 'drizzle-orm';
import { isBaseUnits, MAX_BASE_UNITS } from '../contract/base-units';
import { postgresErrorOf, type ForgeDatabase } from '../db';
import { quoteIdent } from '../db/quote-ident';
import { LEDGER_TABLES } from './ledger-sql';

import { LedgerConflictError, LedgerInputError, LedgerNotReadyError, LedgerRowNotFoundError } from './errors';
import type { LedgerDirection, LedgerStatus, LedgerTransaction } from './ledger-rows';

export { LEDGER_MIGRATION_NAME, LEDGER_MIGRATION_SQL } from './ledger-sql';
export type { LedgerTransaction } from './ledger-rows';

/**
 * The x402 ledger (issue 13, AGENT-04): every payment in or out as one row of `agent_x402_transactions`, the tools
 * offered for sale, and the P&L. Plain core logic over a ForgeDatabase (PGlite or PostgreSQL), nothing of Temporal:
 * PayWorkflow's and the seller's activities are thin adapters over it, and each method is safe to call again with
 * the same input (an activity retried after a crash does).
 *
 * Amounts: the API takes `bigint` (a decimal string of base units is accepted too) and RETURNS DECIMAL STRINGS of
 * base units everywhere (rows, refusals, P&L), so whatever it returns can cross a Temporal payload (JSON has no
 * bigint) unchanged; `BigInt(row.amount)` to compute. Times are returned as ISO 8601 strings (UTC, milliseconds).
 */

/** A row of `agent_x402_offers`: a tool sold over x402. */
interface LedgerOffer {
  tool: string;
  /** Decimal string of base units of `asset`. */
  price: string;
  asset: string;
  network: string;
  payTo: string;
  description: string;
  createdAt: string;
  updatedAt: string;
}

/** Base units: a non-negative bigint, or its decimal string. */
type BaseUnits = bigint | string;

export interface ReserveOutInput {
  /** The PayWorkflow run: the row's identity, so a retried reservation finds its own row. */
  workflowId: string;
  counterparty: string;
  resource: string;
  amount: BaseUnits;
  asset: string;
  network: string;
  /** Most that may be spent in this asset and network over any 24 hours, counting reserved and settled payments. */
  dailyBudget: BaseUnits;
  /** The reservation's time (tests); the database's clock otherwise. */
  now?: Date;
}

type ReserveOutResult =
  /** `created` false: this workflow had reserved already (its row, in whatever status it is now; counted once). */
  | { ok: true; row: LedgerTransaction; created: boolean }
  /** Nothing was reserved: `spentInWindow + amount` would pass `budget` (all decimal strings of base units). */
  | { ok: false; limit: 'dailyBudget'; budget: string; spentInWindow: string; amount: string };

/**
 * What a status change did. `updated`: this call moved the row from `reserved`; `unchanged`: it was in that final
 * status already (a retry; the first call's tx hash / reason are kept); `conflict`: it had ended in the OTHER final
 * status and is left as it is (a settled row never becomes failed, nor a failed one settled): the caller must look
 * at `row`, since what it asked for did not happen.
 */
interface LedgerTransition {
  outcome: 'updated' | 'unchanged' | 'conflict';
  row: LedgerTransaction;
}

interface RecordInInput {
  /** The EIP-3009 nonce of the payment received: one row per nonce. */
  nonce: string;
  /** The payer. */
  counterparty: string;
  resource: string;
  tool: string | null;
  amount: BaseUnits;
  asset: string;
  network: string;
  /** `reserved` before settlement; `settled` or `failed` once the facilitator answered (or the chain, on reconciliation). */
  status: LedgerStatus;
  txHash?: string;
  reason?: string;
}

/**
 * `recorded`: a new row, or this nonce's `reserved` row moved to the final status asked for. `unchanged`: the row
 * had that status already (a retry). `conflict`: it had ended in another status and is left as it is (a final row
 * never changes, nor goes back to `reserved`; see {@link LedgerTransition}).
 */
export interface RecordInResult {
  outcome: 'recorded' | 'unchanged' | 'conflict';
  row: LedgerTransaction;
}

interface PutOfferInput {
  tool: string;
  price: BaseUnits;
  asset: string;
  network: string;
  payTo: string;
  description?: string;
}

/** One line of the P&L: settled income, settled spend and their difference, in base units (decimal strings). */
interface PnlRow {
  /** The tool (or {@link PNL_NO_TOOL} for payments out, which sell no tool), or the UTC day `YYYY-MM-DD`. */
  key: string;
  asset: string;
  network: string;
  income: string;
  spend: string;
  net: string;
}

interface PnlReport {
  /** By key, then asset and network; ordered by key. */
  rows: PnlRow[];
  /** The sum of `rows`. Meaningful as money only when `assets` has one entry: pass `asset`/`network` otherwise. */
  totals: { income: string; spend: string; net: string };
  /** The (asset, network) pairs the rows hold. */
  assets: Array<{ asset: string; network: string }>;
}

/** The key of P&L-by-tool rows that have no tool: payments out (and sales of a resource that is no tool). */
export const PNL_NO_TOOL = '(no tool)';

/** The ledger over one database. */
export interface Ledger {
  /** Whether the ledger migration's tables and view exist in the database's schema. */
  isReady(): Promise<boolean>;
  /**
   * Reserves `amount` against the rolling 24 h budget of its asset and network, atomically: under a transaction-scoped
   * advisory lock, the sum of `out` rows reserved or settled in the window is checked and the row inserted as one
   * serialized unit, so concurrent reservations never overspend. Idempotent per `workflowId`: a second call returns
   * the row the first made (counted once).
   * @throws LedgerConflictError when `workflowId` has a row for another payment (other payee, resource or amount).
   */
  reserveOut(input: ReserveOutInput): Promise<ReserveOutResult>;
  /**
   * Records the signed authorization's nonce on the run's row while it is `reserved`. Idempotent (the same nonce again
   * is the row). A different nonce REPLACES the one there while the row is reserved: a sign step retried after its
   * result was lost signs anew, and only the payload the workflow recorded is ever sent, so the last one signed is the
   * one that can pay. Once the row is settled or failed its nonce never changes.
   * @throws LedgerConflictError when the row is final with another nonce (or none), or another `out` row has it.
   * @throws LedgerRowNotFoundError when no row has `workflowId`.
   */
  attachNonce(workflowId: string, nonce: string): Promise<LedgerTransaction>;
  /**
   * reserved → settled, with the settlement's tx hash (undefined or '' when none is known: stored as null) and the
   * payer the facilitator reported. Idempotent; see {@link LedgerTransition}.
   */
  settleOut(workflowId: string, settlement: { txHash?: string; payer?: string }): Promise<LedgerTransition>;
  /** reserved → failed, with why; its amount stops counting against the budget. Idempotent; see {@link LedgerTransition}. */
  failOut(workflowId: string, reason: string): Promise<LedgerTransition>;
  /**
   * Records a payment received: one row per nonce, idempotent on it. `reserved` first (before the seller settles), then
   * `settled` or `failed` on the same row; a final status can also be recorded without a reservation.
   */
  recordIn(input: RecordInInput): Promise<RecordInResult>;
  /** The `out` row of a PayWorkflow run. */
  getOut(workflowId: string): Promise<LedgerTransaction | undefined>;
  /** The row of a nonce in one direction. */
  getByNonce(direction: LedgerDirection, nonce: string): Promise<LedgerTransaction | undefined>;
  /** Rows still `reserved` that were reserved more than `ms` before `now` (the database's clock by default), oldest first. */
  reservedOlderThan(ms: number, now?: Date): Promise<LedgerTransaction[]>;
  /** Creates or replaces the offer of `tool` (a new price takes effect for the next sale). */
  putOffer(offer: PutOfferInput): Promise<LedgerOffer>;
  getOffer(tool: string): Promise<LedgerOffer | undefined>;
  /** Every offer, by tool. */
  listOffers(): Promise<LedgerOffer[]>;
  /** True when there was an offer to remove. */
  removeOffer(tool: string): Promise<boolean>;
  /** Settled income, spend and net from the `agent_x402_pnl_daily` view, by tool or by UTC day. */
  pnl(options: { by: 'tool' | 'day'; asset?: string; network?: string }): Promise<PnlReport>;
}

// Two-key advisory lock: its own class beside agent migrations' ("Fmig"); one key, as one budget lock is enough for
// payments (a reservation holds it for a few ms).
const LEDGER_LOCK_CLASS = 0x46783432; // "Fx42"
const LEDGER_LOCK_KEY = 1;

/** The ledger over `database`, addressing its tables in `database.schema`, where the migration creates them. */
export function createLedger(database: ForgeDatabase): Ledger {
  const { db } = database;
  const schema = sql.raw(quoteIdent(database.schema));
  const txTable = sql`${schema}.${sql.raw(LEDGER_TABLES.transactions)}`;
  const offerTable = sql`${schema}.${sql.raw(LEDGER_TABLES.offers)}`;
  const pnlView = sql`${schema}.${sql.raw(LEDGER_TABLES.pnlDaily)}`;

  const iso = (column: string) => sql.raw(`to_char(${column} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`);
  // One column list for SELECT and RETURNING, so every read gives the same row shape (text for numeric and times).
  const txColumns = sql.join(
    [
      sql.raw('id::text AS id, direction, counterparty, resource, tool, amount::text AS amount, asset, network'),
      sql.raw('payment_nonce, status, workflow_id, tx_hash, payer, reason'),
      sql`${iso('created_at')} AS created_at, ${iso('updated_at')} AS updated_at, ${iso('settled_at')} AS settled_at`,
    ],
    sql`, `,
  );
  const offerColumns = sql`tool, price::text AS price, asset, network, pay_to, description, ${iso('created_at')} AS created_at, ${iso('updated_at')} AS updated_at`;

  /** Runs a query; a missing ledger relation (42P01) becomes LedgerNotReadyError. */
  async function query<T>(executor: Pick<ForgeDatabase['db'], 'execute'>, statement: SQL): Promise<T[]> {
    try {
      return ((await executor.execute(statement)) as unknown as { rows: T[] }).rows;
    } catch (err) {
      if (postgresErrorOf(err)?.code === '42P01') {
        throw new LedgerNotReadyError(`The x402 ledger's tables are not in schema ${database.schema} yet: apply the migration first (isReady() says when).`, {
          cause: err,
        });
      }
      throw err;
    }
  }

  const txRows = async (executor: Pick<ForgeDatabase['db'], 'execute'>, statement: SQL) =>
    (await query<RawTransaction>(executor, statement)).map(toTransaction);

  const getOut = async (workflowId: string) =>
    (await txRows(db, sql`SELECT ${txColumns} FROM ${txTable} WHERE workflow_id = ${workflowId} AND direction = 'out'`))[0];

  /** The row after an UPDATE that matched nothing: the same status is a retry, the other final one a conflict. */
  async function transitionOf(workflowId: string, updated: LedgerTransaction | undefined, to: LedgerStatus): Promise<LedgerTransition> {
    if (updated) return { outcome: 'updated', row: updated };
    const row = await getOut(workflowId);
    if (!row) throw new LedgerRowNotFoundError(workflowId);
    return { outcome: row.status === to ? 'unchanged' : 'conflict', row };
  }

  const ledger: Ledger = {
    async isReady() {
      // to_regclass: NULL for a missing relation rather than an error, and the name is resolved in our schema only.
      const present = Object.values(LEDGER_TABLES).map((name) => sql`to_regclass(${`${quoteIdent(database.schema)}.${quoteIdent(name)}`}::text) IS NOT NULL`);
      const [row] = await query<{ ready: boolean }>(db, sql`SELECT ${sql.join(present, sql` AND `)} AS ready`);
      return row.ready === true;
    },

    async reserveOut(input) {
      const amount = baseUnits(input.amount, 'amount');
      const budget = baseUnits(input.dailyBudget, 'dailyBudget');
      for (const field of ['workflowId', 'counterparty', 'resource', 'asset', 'network'] as const) nonEmpty(input[field], field);
      const at = input.now?.toISOString() ?? null;
      return db.transaction(async (tx) => {
        // Check and insert are one unit: whoever holds the lock sees every reservation committed before it (READ
        // COMMITTED takes a new snapshot per statement). On PGlite transactions never interleave; the lock is a no-op.
        await tx.execute(sql`SELECT pg_advisory_xact_lock(${LEDGER_LOCK_CLASS}, ${LEDGER_LOCK_KEY})`);
        const [existing] = await txRows(tx, sql`SELECT ${txColumns} FROM ${txTable} WHERE workflow_id = ${input.workflowId}`);
        if (existing) {
          const same =
            existing.direction === 'out' &&
            existing.counterparty === input.counterparty &&
            existing.resource === input.resource &&
            existing.amount === amount.toString() &&
            existing.asset === input.asset &&
            existing.network === input.network;
          if (!same) {
            throw new LedgerConflictError(
              `Workflow ${input.workflowId} already reserved another payment (${existing.amount} of ${existing.asset} to ` +
                `${existing.counterparty} for ${existing.resource}); one workflow is one payment.`,
              existing,
            );
          }
          return { ok: true, row: existing, created: false };
        }
        const [window] = await query<{ spent: string; at: string }>(
          tx,
          sql`WITH t AS (SELECT coalesce(${at}::timestamptz, clock_timestamp()) AS at)
              SELECT (SELECT coalesce(sum(amount), 0)::text FROM ${txTable}
                        WHERE direction = 'out' AND status IN ('reserved', 'settled')
                          AND asset = ${input.asset} AND network = ${input.network}
                          AND created_at > t.at - interval '24 hours') AS spent,
                     t.at::text AS at
                FROM t`,
        );
        const spent = BigInt(window.spent);
        if (spent + amount > budget) {
          return { ok: false, limit: 'dailyBudget', budget: budget.toString(), spentInWindow: spent.toString(), amount: amount.toString() };
        }
        const [row] = await txRows(
          tx,
          sql`INSERT INTO ${txTable} (direction, counterparty, resource, amount, asset, network, status, workflow_id, created_at, updated_at)
              VALUES ('out', ${input.counterparty}, ${input.resource}, ${amount.toString()}::numeric, ${input.asset}, ${input.network},
                      'reserved', ${input.workflowId}, ${window.at}::timestamptz, ${window.at}::timestamptz)
              RETURNING ${txColumns}`,
        );
        return { ok: true, row, created: true };
      });
    },

    async attachNonce(workflowId, nonce) {
      nonEmpty(workflowId, 'workflowId');
      nonEmpty(nonce, 'nonce');
      let updated: LedgerTransaction | undefined;
      try {
        [updated] = await txRows(
          db,
          sql`UPDATE ${txTable} SET payment_nonce = ${nonce}, updated_at = clock_timestamp()
               WHERE workflow_id = ${workflowId} AND direction = 'out' AND status = 'reserved'
               RETURNING ${txColumns}`,
        );
      } catch (err) {
        if (postgresErrorOf(err)?.code !== '23505') throw err;
        const other = await ledger.getByNonce('out', nonce);
        throw new LedgerConflictError(
          `Nonce ${nonce} is already recorded for another payment (workflow ${other?.workflowId ?? '?'}): an ` + 'authorization is used for one payment only.',
          other,
          { cause: err },
        );
      }
      if (updated) return updated;
      const row = await getOut(workflowId);
      if (!row) throw new LedgerRowNotFoundError(workflowId);
      if (row.paymentNonce === nonce) return row;
      throw new LedgerConflictError(
        row.paymentNonce === null
          ? `The payment of workflow ${workflowId} is ${row.status} without a signature; no nonce can be added to it now.`
          : `The payment of workflow ${workflowId} is ${row.status} with nonce ${row.paymentNonce}; it cannot take ${nonce} now.`,
        row,
      );
    },

    async settleOut(workflowId, settlement) {
      nonEmpty(workflowId, 'workflowId');
      const [updated] = await txRows(
        db,
        sql`UPDATE ${txTable}
               SET status = 'settled', tx_hash = ${settlement.txHash || null}, payer = coalesce(${settlement.payer || null}, payer),
                   settled_at = clock_timestamp(), updated_at = clock_timestamp()
             WHERE workflow_id = ${workflowId} AND direction = 'out' AND status = 'reserved'
             RETURNING ${txColumns}`,
      );
      return transitionOf(workflowId, updated, 'settled');
    },

    async failOut(workflowId, reason) {
      nonEmpty(workflowId, 'workflowId');
      const [updated] = await txRows(
        db,
        sql`UPDATE ${txTable} SET status = 'failed', reason = ${reason}, updated_at = clock_timestamp()
             WHERE workflow_id = ${workflowId} AND direction = 'out' AND status = 'reserved'
             RETURNING ${txColumns}`,
      );
      return transitionOf(workflowId, updated, 'failed');
    },

    async recordIn(input) {
      const amount = baseUnits(input.amount, 'amount');
      for (const field of ['nonce', 'counterparty', 'resource', 'asset', 'network'] as const) nonEmpty(input[field], field);
      if (!['reserved', 'settled', 'failed'].includes(input.status)) {
        throw new LedgerInputError(`status must be reserved, settled or failed, not ${String(input.status)}`);
      }
      const settled = input.status === 'settled';
      // One statement, so a reservation and its outcome racing (a buyer's retry beside the first request) cannot both
      // insert: the nonce's row is created, or its reserved row moved to the final status; a final row is left alone.
      const [written] = await txRows(
        db,
        sql`INSERT INTO ${txTable} AS t (direction, counterparty, resource, tool, amount, asset, network, payment_nonce, status,
                                         tx_hash, payer, reason, settled_at)
            VALUES ('in', ${input.counterparty}, ${input.resource}, ${input.tool}, ${amount.toString()}::numeric, ${input.asset},
                    ${input.network}, ${input.nonce}, ${input.status}, ${input.txHash || null}, ${input.counterparty},
                    ${input.reason ?? null}, ${settled ? sql`clock_timestamp()` : sql`NULL`})
            ON CONFLICT ON CONSTRAINT agent_x402_transactions_nonce_key DO UPDATE
               SET status = excluded.status, tx_hash = coalesce(excluded.tx_hash, t.tx_hash), reason = excluded.reason,
                   settled_at = excluded.settled_at, updated_at = clock_timestamp()
             WHERE t.status = 'reserved' AND excluded.status <> 'reserved'
            RETURNING ${txColumns}`,
      );
      if (written) return { outcome: 'recorded', row: written };
      const row = await ledger.getByNonce('in', input.nonce);
      // The conflicting row was there a moment ago and rows are never deleted.
      if (!row) throw new Error(`x402 ledger: the row of nonce ${input.nonce} vanished`);
      return { outcome: row.status === input.status ? 'unchanged' : 'conflict', row };
    },

    getOut,

    async getByNonce(direction, nonce) {
      return (await txRows(db, sql`SELECT ${txColumns} FROM ${txTable} WHERE direction = ${direction} AND payment_nonce = ${nonce}`))[0];
    },

    async reservedOlderThan(ms, now) {
      if (!Number.isFinite(ms) || ms < 0) throw new LedgerInputError(`ms must be a non-negative number, not ${ms}`);
      return txRows(
        db,
        sql`SELECT ${txColumns} FROM ${txTable}
             WHERE status = 'reserved'
               AND created_at < coalesce(${now?.toISOString() ?? null}::timestamptz, clock_timestamp()) - ${ms}::double precision * interval '1 millisecond'
             ORDER BY created_at, id`,
      );
    },

    async putOffer(offer) {
      const price = baseUnits(offer.price, 'price');
      for (const field of ['tool', 'asset', 'network', 'payTo'] as const) nonEmpty(offer[field], field);
      const [row] = await query<RawOffer>(
        db,
        sql`INSERT INTO ${offerTable} (tool, price, asset, network, pay_to, description)
            VALUES (${offer.tool}, ${price.toString()}::numeric, ${offer.asset}, ${offer.network}, ${offer.payTo}, ${offer.description ?? ''})
            ON CONFLICT (tool) DO UPDATE
               SET price = excluded.price, asset = excluded.asset, network = excluded.network, pay_to = excluded.pay_to,
                   description = excluded.description, updated_at = clock_timestamp()
            RETURNING ${offerColumns}`,
      );
      return toOffer(row);
    },

    async getOffer(tool) {
      const [row] = await query<RawOffer>(db, sql`SELECT ${offerColumns} FROM ${offerTable} WHERE tool = ${tool}`);
      return row ? toOffer(row) : undefined;
    },

    async listOffers() {
      return (await query<RawOffer>(db, sql`SELECT ${offerColumns} FROM ${offerTable} ORDER BY tool`)).map(toOffer);
    },

    async removeOffer(tool) {
      const rows = await query(db, sql`DELETE FROM ${offerTable} WHERE tool = ${tool} RETURNING tool`);
      return rows.length > 0;
    },

    async pnl(options) {
      if (options.by !== 'tool' && options.by !== 'day') throw new LedgerInputError(`by must be tool or day, not ${String(options.by)}`);
      const key = options.by === 'day' ? sql.raw('day::text') : sql`coalesce(tool, ${PNL_NO_TOOL})`;
      const filters = [
        ...(options.asset !== undefined ? [sql`asset = ${options.asset}`] : []),
        ...(options.network !== undefined ? [sql`network = ${options.network}`] : []),
      ];
      const where = filters.length > 0 ? sql`WHERE ${sql.join(filters, sql` AND `)}` : sql``;
      const rows = await query<PnlRow>(
        db,
        sql`SELECT ${key} AS key, asset, network, sum(income)::text AS income, sum(spend)::text AS spend, sum(net)::text AS net
              FROM ${pnlView} ${where}
             GROUP BY 1, asset, network
             ORDER BY 1, asset, network`,
      );
      const total = (field: 'income' | 'spend' | 'net') => rows.reduce((sum, r) => sum + BigInt(r[field]), 0n).toString();
      const assets = [...new Map(rows.map((r) => [`${r.asset}\n${r.network}`, { asset: r.asset, network: r.network }])).values()];
      return {
        rows: rows.map((r) => ({ key: r.key, asset: r.asset, network: r.network, income: r.income, spend: r.spend, net: r.net })),
        totals: { income: total('income'), spend: total('spend'), net: total('net') },
        assets,
      };
    },
  };
  return ledger;
}

interface RawTransaction {
  id: string;
  direction: LedgerDirection;
  counterparty: string;
  resource: string;
  tool: string | null;
  amount: string;
  asset: string;
  network: string;
  payment_nonce: string | null;
  status: LedgerStatus;
  workflow_id: string | null;
  tx_hash: string | null;
  payer: string | null;
  reason: string | null;
  created_at: string;
  updated_at: string;
  settled_at: string | null;
}

interface RawOffer {
  tool: string;
  price: string;
  asset: string;
  network: string;
  pay_to: string;
  description: string;
  created_at: string;
  updated_at: string;
}

function toTransaction(r: RawTransaction): LedgerTransaction {
  return {
    id: r.id,
    direction: r.direction,
    counterparty: r.counterparty,
    resource: r.resource,
    tool: r.tool,
    amount: r.amount,
    asset: r.asset,
    network: r.network,
    paymentNonce: r.payment_nonce,
    status: r.status,
    workflowId: r.workflow_id,
    txHash: r.tx_hash,
    payer: r.payer,
    reason: r.reason,
    createdAt: r.created_at,
    updatedAt: r.updated_at,
    settledAt: r.settled_at,
  };
}

function toOffer(r: RawOffer): LedgerOffer {
  return {
    tool: r.tool,
    price: r.price,
    asset: r.asset,
    network: r.network,
    payTo: r.pay_to,
    description: r.description,
    createdAt: r.created_at,
    updatedAt: r.updated_at,
  };
}

/** A non-negative integer amount of base units, from a bigint or its decimal string. */
function baseUnits(value: BaseUnits, field: string): bigint {
  let n: bigint;
  if (typeof value === 'bigint') n = value;
  else if (isBaseUnits(value)) n = BigInt(value);
  else throw new LedgerInputError(`${field} must be a bigint or a decimal string of base units, not ${JSON.stringify(String(value))}`);
  // numeric(78,0) holds up to 78 digits: anything longer would fail in the database with a less helpful error.
  if (n < 0n || n > MAX_BASE_UNITS) throw new LedgerInputError(`${field} must be between 0 and 10^78 - 1 base units, not ${n}`);
  return n;
}

function nonEmpty(value: unknown, field: string): void {
  if (typeof value !== 'string' || value.length === 0) throw new LedgerInputError(`${field} must be a non-empty string`);
}
