import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { serve } from '@hono/node-server';
import { Hono } from 'hono';
import { sql } from 'drizzle-orm';
import { x402ResourceServer } from '@x402/core/server';
import { ExactEvmScheme as ExactEvmServerScheme } from '@x402/evm/exact/server';
import { paymentMiddleware } from '@x402/hono';
import { openPglite } from '../../../src/db/pglite';
import { LEDGER_TABLES } from '../../../src/x402/ledger-sql';
import { startLocalX402Network, type LocalWallet, type LocalX402Network } from '../../../src/x402/local-network';
import type { Hex } from '../../../src/x402/viem';
import type { RunResult, RunSpace, Scenario } from './scenarios';
import { startHostileSeller, type HostileSeller } from '../../helpers/hostile-seller';

/**
 * The payment scenario of the matrix (issue 13): PayWorkflow pays for `GET /report` of a seller on a real local x402
 * network (anvil, the EIP-3009 token, the official facilitator settling on the chain; the seller is Hono with the
 * official @x402/hono middleware, as in test/x402/pay.test.ts). Each run is the platform's first payment, so it also
 * runs the child MigrateSchemaWorkflow that creates the ledger's tables, and the matrix kills inside that child too.
 *
 * The chain and the seller live for the jest process (made at the first cell, stopped by {@link stopPayNetwork});
 * every run gets a fresh buyer wallet funded with {@link BUYER_FUNDS}, so what a run moved is read as balances:
 * the buyer spent exactly one price, the seller earned exactly one price, the seller settled exactly one payment of
 * that buyer, and the run's ledger has exactly one row, settled, naming the nonce and the transaction the seller
 * settled. A payment made twice, or a row left reserved, or a ledger that disagrees with the chain shows here.
 */

const PRICE = 25_000n;
const BUYER_FUNDS = 1_000_000n;
const ROUTE = '/report';
const CONTENT = { report: 'paid content of the chaos matrix' };

/** What the seller's resource server settled (its onAfterSettle / onSettleFailure hooks), in order. */
interface Settlement {
  status: 'settled' | 'failed';
  payer: string;
  nonce: string;
  txHash?: string;
  amount: string;
}

interface Market {
  net: LocalX402Network;
  seller: LocalWallet;
  /** A seller that answers the paid request and never settles it (test/helpers/hostile-seller.ts). */
  hostile: HostileSeller;
  server: Server;
  url: string;
  settlements: Settlement[];
}

/** The run under way (cells run one after another in one jest process). */
interface CurrentRun {
  buyer: LocalWallet;
  sellerBefore: bigint;
  settlementsBefore: number;
  workflowId?: string;
}

let market: Promise<Market> | undefined;
/** The market once started (prepare() awaited it), for what must be read synchronously (env()). */
let started: Market | undefined;
let current: CurrentRun | undefined;

async function startMarket(): Promise<Market> {
  const net = await startLocalX402Network();
  try {
    const seller = await net.newWallet();
    const settlements: Settlement[] = [];
    const resourceServer = new x402ResourceServer(net.facilitatorClient).register(net.network, new ExactEvmServerScheme());
    const nonceOf = (payload: unknown) => String((payload as { payload?: { authorization?: { nonce?: unknown } } }).payload?.authorization?.nonce ?? '');
    // The hooks run inside settlement, before the middleware answers: the record exists when the buyer has the answer.
    resourceServer.onAfterSettle((ctx) => {
      settlements.push({
        status: 'settled',
        payer: ctx.result.payer ?? '',
        nonce: nonceOf(ctx.paymentPayload),
        txHash: ctx.result.transaction,
        amount: ctx.requirements.amount,
      });
      return Promise.resolve();
    });
    resourceServer.onSettleFailure((ctx) => {
      const failure = ctx.error as Error & { payer?: string };
      settlements.push({ status: 'failed', payer: failure.payer ?? '', nonce: nonceOf(ctx.paymentPayload), amount: ctx.requirements.amount });
      return Promise.resolve(undefined);
    });
    const accepts = { scheme: 'exact', price: net.price(PRICE), network: net.network, payTo: seller.address };
    const app = new Hono();
    app.use(paymentMiddleware({ [`GET ${ROUTE}`]: { accepts, description: 'A paid report', mimeType: 'application/json' } }, resourceServer));
    app.get(ROUTE, (c) => c.json(CONTENT));
    const server = await new Promise<Server>((resolve) => {
      const s = serve({ fetch: app.fetch, hostname: '127.0.0.1', port: 0 }, () => resolve(s as Server));
    });
    const hostile = await startHostileSeller(net, { price: PRICE });
    return { net, seller, hostile, server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}${ROUTE}`, settlements };
  } catch (err) {
    await net.stop();
    throw err;
  }
}

/** Stops the seller and the chain (the matrix calls it after its last cell); nothing when no pay cell ran. */
export async function stopPayNetwork(): Promise<void> {
  const made = market;
  market = undefined;
  started = undefined;
  current = undefined;
  if (!made) return;
  const { net, server, hostile } = await made;
  await hostile.close();
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  await net.stop();
}

const run = (): CurrentRun => {
  if (!current) throw new Error('the pay scenario has no current run: prepare() did not run');
  return current;
};

interface LedgerRow {
  direction: string;
  status: string;
  counterparty: string;
  resource: string;
  amount: string;
  asset: string;
  network: string;
  payment_nonce: string | null;
  tx_hash: string | null;
  payer: string | null;
  workflow_id: string | null;
  reason: string | null;
  settled: boolean;
}

/** The ledger's rows, read from the cell's PGlite after the workers stopped. */
async function ledgerRows(home: string): Promise<LedgerRow[]> {
  const database = await openPglite(path.join(home, 'pgdata'), 'public');
  try {
    const result = (await database.db.execute(
      sql.raw(`SELECT direction, status, counterparty, resource, amount::text AS amount, asset, network, payment_nonce, tx_hash, payer,
                      workflow_id, reason, settled_at IS NOT NULL AS settled
                 FROM ${LEDGER_TABLES.transactions} ORDER BY created_at, id`),
    )) as unknown as { rows: LedgerRow[] };
    return result.rows;
  } finally {
    await database.close();
  }
}

export const payScenario: Scenario = {
  workflowType: 'payWorkflow',
  label: 'a first payment on the local x402 network (the ledger migration runs as a child)',
  points: [
    'x402LedgerReady.before',
    'x402LedgerReady.after',
    // The child run that creates the ledger's tables (a point naming its own workflow type).
    'migrateSchemaWorkflow:validateMigration.before',
    'migrateSchemaWorkflow:validateMigration.after',
    'migrateSchemaWorkflow:applyMigration.before',
    'migrateSchemaWorkflow:applyMigration.after',
    'probePayment.before',
    'probePayment.after',
    'reservePayment.before',
    'reservePayment.after',
    'signPayment.before',
    'signPayment.after',
    'sendPayment.before',
    'sendPayment.after',
    // The chain decides (issue 26): the receipt checked on the chain, then the ledger written from it.
    'checkPayment.before',
    'checkPayment.after',
    'recordDecision.before',
    'recordDecision.after',
  ],
  // Paid on the chain, the seller's answer in the dead worker's memory only: the retried send carries the same
  // payload, and the run must neither pay again nor lose track of the payment.
  fastPoint: 'sendPayment.after',
  async prepare() {
    // A market that failed to start is tried again by the next cell rather than failing every cell alike.
    market ??= startMarket().catch((err: unknown) => {
      market = undefined;
      throw err;
    });
    started = await market;
    const { net, seller, settlements } = started;
    const buyer = await net.newWallet(BUYER_FUNDS);
    current = { buyer, sellerBefore: await net.balanceOf(seller.address), settlementsBefore: settlements.length };
  },
  env() {
    // prepare() ran before the cell's platform: the chain and this run's buyer are known.
    const { net } = marketNow();
    return {
      FORGE_X402_WALLET_KEY: run().buyer.privateKey,
      FORGE_X402_RPC_URL: net.rpcUrl,
      FORGE_X402_ALLOWED_ASSETS: net.token.address,
      FORGE_X402_MAX_PER_PAYMENT: String(PRICE * 4n),
      FORGE_X402_DAILY_BUDGET: String(PRICE * 10n),
    };
  },
  setup: () => Promise.resolve(),
  async run(forge) {
    const key = `chaos-${run().buyer.address}`;
    const result = await forge.pay(marketNow().url, { idempotencyKey: key });
    // A caller that retries (its answer lost with a crash of its own) joins the run: the same run, nothing paid twice.
    const again = await forge.pay(marketNow().url, { idempotencyKey: key });
    if (again.workflowId !== result.workflowId || again.status !== result.status || again.txHash !== result.txHash) {
      throw new Error(`a retried pay with the same idempotency key did not join the first run: ${JSON.stringify({ result, again })}`);
    }
    run().workflowId = result.workflowId;
    return result as unknown as RunResult;
  },
  // Not txHash (another transaction each run) nor the reason (an operator's note): what the caller got and paid.
  outcome: (r) => ({ status: r.status, amount: r.amount, asset: r.asset, network: r.network, payTo: r.payTo, httpStatus: r.httpStatus, body: r.body }),
  async state(space: RunSpace) {
    const { net, seller, settlements } = marketNow();
    const { buyer, sellerBefore, settlementsBefore, workflowId } = run();
    const mine = settlements.slice(settlementsBefore).filter((s) => s.payer.toLowerCase() === buyer.address.toLowerCase());
    const settled = mine.filter((s) => s.status === 'settled');
    const rows = await ledgerRows(space.home);
    const usedOnChain = await Promise.all(rows.map((r) => (r.payment_nonce ? net.authorizationState(buyer.address, r.payment_nonce as Hex) : false)));
    const state = {
      buyerSpent: (BUYER_FUNDS - (await net.balanceOf(buyer.address))).toString(),
      sellerEarned: ((await net.balanceOf(seller.address)) - sellerBefore).toString(),
      sellerSettlements: mine.map((s) => `${s.status} ${s.amount}`),
      ledger: rows.map((r, i) => ({
        ...r,
        // What differs from run to run, replaced by what it must be.
        payment_nonce: r.payment_nonce === settled[0]?.nonce ? '<the nonce the seller settled>' : r.payment_nonce,
        nonceUsedOnChain: usedOnChain[i],
        tx_hash: r.tx_hash && r.tx_hash === settled[0]?.txHash ? '<the seller’s settlement>' : r.tx_hash,
        payer: r.payer?.toLowerCase() === buyer.address.toLowerCase() ? '<buyer>' : r.payer,
        workflow_id: r.workflow_id === workflowId ? '<run>' : r.workflow_id,
        resource: r.resource === marketNow().url ? '<seller>/report' : r.resource,
      })),
    };
    // Exactly once, said outright rather than only as "like the uninterrupted run" (which must hold it too).
    const once =
      state.buyerSpent === PRICE.toString() &&
      state.sellerEarned === PRICE.toString() &&
      state.sellerSettlements.join() === `settled ${PRICE}` &&
      state.ledger.length === 1 &&
      state.ledger[0].status === 'settled' &&
      state.ledger[0].nonceUsedOnChain &&
      state.ledger[0].payment_nonce === '<the nonce the seller settled>' &&
      state.ledger[0].tx_hash === '<the seller’s settlement>';
    if (!once) throw new Error(`the run did not pay exactly once (price ${PRICE}): ${JSON.stringify(state)}`);
    return state;
  },
};

function marketNow(): Market {
  if (!started) throw new Error('the pay scenario’s market is not started: prepare() did not run');
  return started;
}

/**
 * The payment the chain must undo (issue 26): a seller that answers the paid request without ever settling it. The
 * run waits its grace, cancels the authorization on the chain and only then fails and releases the reservation; a
 * kill at any step of that (the check, the cancellation, the ledger write) must end the same: nothing moved, the
 * authorization used up by its cancellation, one failed row. Full matrix only (the pay scenario above has the fast cell).
 */
export const payCancelledScenario: Scenario = {
  workflowType: 'payWorkflow',
  label: 'a payment to a seller that never settles (the run cancels the authorization on the chain)',
  points: [
    'sendPayment.after',
    'checkPayment.before',
    'checkPayment.after',
    'cancelPayment.before',
    'cancelPayment.after',
    'recordDecision.before',
    'recordDecision.after',
  ],
  prepare: () => payScenario.prepare!(),
  env: (home) => payScenario.env!(home),
  setup: () => Promise.resolve(),
  async run(forge) {
    const result = await forge.pay(marketNow().hostile.url('/silent'));
    run().workflowId = result.workflowId;
    return result as unknown as RunResult;
  },
  outcome: (r) => ({ status: r.status, amount: r.amount, asset: r.asset, payTo: r.payTo, httpStatus: r.httpStatus, body: r.body }),
  async state(space: RunSpace) {
    const { net } = marketNow();
    const { buyer } = run();
    const rows = await ledgerRows(space.home);
    const state = {
      buyerSpent: (BUYER_FUNDS - (await net.balanceOf(buyer.address))).toString(),
      ledger: rows.map((r) => ({
        direction: r.direction,
        status: r.status,
        amount: r.amount,
        settled: r.settled,
        mentionsCancel: /cancel/i.test(r.reason ?? ''),
      })),
      authorizationUsedUp: await Promise.all(rows.map((r) => (r.payment_nonce ? net.authorizationState(buyer.address, r.payment_nonce as Hex) : false))),
    };
    const undone =
      state.buyerSpent === '0' && rows.length === 1 && rows[0].status === 'failed' && state.ledger[0].mentionsCancel && state.authorizationUsedUp[0];
    if (!undone) throw new Error(`the run did not end cancelled with nothing paid: ${JSON.stringify({ ...state, reasons: rows.map((r) => r.reason) })}`);
    return state;
  },
};
