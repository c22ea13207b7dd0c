import type { ChildProcess } from 'node:child_process';
import { rmSync } from 'node:fs';
import path from 'node:path';
import { decodePaymentRequiredHeader } from '@x402/core/http';
import { openPglite } from '../../src/db/pglite';
import { findFreePort } from '../../src/process/free-port';
import { createLedger, type LedgerTransaction } from '../../src/x402/ledger';
import { startFacilitatorServer, type FacilitatorServer } from '../../src/x402/facilitator-server';
import { startLocalX402Network, type LocalWallet, type LocalX402Network } from '../../src/x402/local-network';
import { authorizationOnChain } from '../../src/x402/payer';
import { reconcileReserved, SALE_SETTLES_WITHIN_MS } from '../../src/x402/reconcile';
import { useTemporal } from '../helpers/platform';
import { adderTool } from '../helpers/tools';
import { localBuyerClient, signedPayment } from '../helpers/x402-buyer';
import { startForgeWorker, stopWorker, workerExit } from './forge-worker';
import { SALE_KILL_CELLS } from './fault-cells';
import { createCellPlatform } from './matrix/cell';

/**
 * The sale path under SIGKILL (issue 13: "every payment, in or out, has exactly one row whose status ends settled or
 * failed; reconciliation finds rows left reserved"). A sale is no workflow: it is an HTTP request the worker's x402
 * server answers, writing the ledger's `in` row as `reserved` before it asks the facilitator to settle and the outcome
 * after. The real `forge worker` sells a deployed tool (forge sell) on a real local chain with the official facilitator
 * (over HTTP, as a hosted one is); a buyer signs one payment; the worker is armed to SIGKILL itself before or after
 * either ledger write (`sale:<step>.<moment>`); a fresh worker takes over at the same address; the buyer sends the
 * same signed payment again, as a paying client (PayWorkflow) does, or gives up; an hour later reconciliation (the
 * worker's sweep, run here on the cell's database) decides what is still reserved from the chain. Then the chain and
 * the ledger must agree: one row for the payment, final, settled with the transaction that moved exactly one price,
 * or failed with nothing moved.
 *
 * Run alone (`npm run jest -- <this file>`) it runs the cell that needs reconciliation (the kill between the
 * settlement and its record); `npm run test:chaos` (FORGE_CHAOS_MATRIX=full, .ci/run's chaos step) runs every point.
 */

const PRICE = 20_000n;
const BUYER_FUNDS = 1_000_000n;
const TOOL = 'adder';
const full = process.env.FORGE_CHAOS_MATRIX === 'full';
const temporal = useTemporal();

const FAST = 'sale:recordSale.before';

let net: LocalX402Network;
let facilitator: FacilitatorServer;
let payee: LocalWallet;

beforeAll(async () => {
  net = await startLocalX402Network();
  facilitator = await startFacilitatorServer({ facilitator: net.facilitator });
  payee = await net.newWallet();
}, 60_000);

afterAll(async () => {
  await facilitator?.close();
  await net?.stop();
});

const cells = full ? SALE_KILL_CELLS : SALE_KILL_CELLS.filter((c) => c.point === FAST);
test.each(cells)(
  'SIGKILL at $point (the buyer sends it again: $buyerRetries): one row, $ends, as the chain says',
  async ({ point, buyerRetries, ends }) => {
    const sellAddress = `127.0.0.1:${await findFreePort()}`;
    const { home, env, forge } = createCellPlatform(temporal(), {
      env: () => ({
        FORGE_X402_RPC_URL: net.rpcUrl,
        FORGE_X402_FACILITATOR_URL: facilitator.url,
        FORGE_X402_SELL_ASSET: net.token.address,
        FORGE_X402_SELL_NETWORK: net.network,
        FORGE_X402_PAY_TO: payee.address,
        FORGE_X402_SELL_ADDRESS: sellAddress,
      }),
    });
    let worker: ChildProcess | undefined;
    try {
      worker = await startForgeWorker(env);
      expect(await forge.deployTool({ name: TOOL, source: adderTool('sold'), testInput: { a: 1, b: 2 } })).toMatchObject({ status: 'active' });
      const offered = await forge.sell(TOOL, { price: PRICE });
      expect(offered).toMatchObject({ status: 'offered' });
      const url = offered.url as string;
      await stopWorker(worker);

      worker = await startForgeWorker({ ...env, FORGE_FAULT_KILL_AT: point });
      const armed = worker;
      const buyer = await net.newWallet(BUYER_FUNDS);
      const earnedBefore = await net.balanceOf(payee.address);
      const send = (header?: string) =>
        fetch(url, {
          method: 'POST',
          headers: { 'content-type': 'application/json', ...(header ? { 'PAYMENT-SIGNATURE': header } : {}) },
          body: JSON.stringify({ a: 2, b: 3 }),
        });
      const terms = decodePaymentRequiredHeader((await send()).headers.get('PAYMENT-REQUIRED') as string);
      const { header, nonce } = await signedPayment(localBuyerClient(net, buyer, PRICE), terms);

      // The worker dies answering the paid call: the buyer gets no answer.
      const first = await send(header).then(
        (r) => `answered ${r.status}`,
        () => 'no answer',
      );
      expect(await workerExit(armed)).toBe('SIGKILL');
      expect(first).toBe('no answer');

      worker = await startForgeWorker(env);
      if (buyerRetries) {
        const again = await send(header);
        // Not settled before the kill: the retry buys the call. Settled already: the nonce is used, nothing is charged again.
        const settledBeforeKill = point.startsWith('sale:recordSale');
        expect(again.status).toBe(settledBeforeKill ? 402 : 200);
        if (!settledBeforeKill) expect(await again.json()).toMatchObject({ output: { sum: 5 } });
      }
      await stopWorker(worker);
      worker = undefined;

      // Past the time a sale may take to settle, the worker's sweep: the cell's database, the chain.
      const database = await openPglite(path.join(home, 'pgdata'), 'public');
      let rows: LedgerTransaction[];
      try {
        const ledger = createLedger(database);
        await reconcileReserved({ ledger, rpcUrl: net.rpcUrl, now: new Date(Date.now() + SALE_SETTLES_WITHIN_MS + 60_000) });
        rows = (await ledger.reservedOlderThan(0, new Date(Date.now() + SALE_SETTLES_WITHIN_MS + 60_000))).filter((r) => r.direction === 'in');
        expect(rows).toEqual([]); // nothing left reserved
        const row = await ledger.getByNonce('in', nonce);
        rows = row ? [row] : [];
      } finally {
        await database.close();
      }

      const onChain = await authorizationOnChain(net.rpcUrl, net.token.address, buyer.address, nonce);
      const moved = { buyerSpent: BUYER_FUNDS - (await net.balanceOf(buyer.address)), payeeEarned: (await net.balanceOf(payee.address)) - earnedBefore };
      if (ends === 'settled') {
        expect(moved).toEqual({ buyerSpent: PRICE, payeeEarned: PRICE });
        expect(onChain.used).toBe(true);
        expect(rows).toEqual([
          expect.objectContaining({
            direction: 'in',
            status: 'settled',
            tool: TOOL,
            amount: PRICE.toString(),
            txHash: onChain.txHash,
            settledAt: expect.any(String),
          }),
        ]);
      } else {
        expect(moved).toEqual({ buyerSpent: 0n, payeeEarned: 0n });
        expect(onChain.used).toBe(false);
        expect(rows).toEqual([expect.objectContaining({ direction: 'in', status: 'failed', reason: expect.stringContaining('never used') })]);
      }
    } finally {
      if (worker) await stopWorker(worker);
      rmSync(home, { recursive: true, force: true });
    }
  },
  240_000,
);
