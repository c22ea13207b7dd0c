import { randomBytes } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import { serve } from '@hono/node-server';
import { Hono } from 'hono';
import { decodePaymentRequiredHeader } from '@x402/core/http';
import { x402ResourceServer, type FacilitatorClient } from '@x402/core/server';
import { ExactEvmScheme as ExactEvmServerScheme } from '@x402/evm/exact/server';
import { paymentMiddleware } from '@x402/hono';
import type { ForgeDatabase } from '../../src/db';
import { createLedger, type Ledger } from '../../src/x402/ledger';
import { authorizationOnChain, probePayment, sendPaidRequest, signPayment } from '../../src/x402/payer';
import { reconcileReserved } from '../../src/x402/reconcile';
import { cancelAuthorization } from '../../src/x402/chain-truth';
import type { Hex } from '../../src/x402/viem';
import { recordSale } from '../../src/x402/sales';
import { startSeller } from '../../src/x402/seller';
import { startLocalX402Network, type LocalWallet, type LocalX402Network } from '../../src/x402';
import { backendKinds, type TestBackend } from '../db/backends';
import { localBuyerClient, signedPayment } from '../helpers/x402-buyer';
import { applyLedgerMigration } from '../helpers/x402-ledger';

// Reconciliation of payments a crash left `reserved`: the chain decides. A real chain and seller make the three cases:
// never signed, signed and settled (the answer lost), signed and never sent; and for sales (rows `in`), Forge's own
// seller with a settlement whose answer was lost, and a sale reserved but never settled.

const PRICE = 10_000n;
const HOUR = 60 * 60_000;

describe.each(backendKinds())('x402 reconciliation on $kind', ({ make }) => {
  let backend: TestBackend;
  let database: ForgeDatabase;
  let ledger: Ledger;
  let net: LocalX402Network;
  let wallet: LocalWallet;
  let seller: LocalWallet;
  let server: Server;
  let url: string;

  beforeAll(async () => {
    backend = make();
    database = await backend.open();
    ledger = createLedger(database);
    await applyLedgerMigration(database);
    net = await startLocalX402Network();
    [wallet, seller] = await Promise.all([net.newWallet(1_000_000n), net.newWallet()]);
    const resourceServer = new x402ResourceServer(net.facilitatorClient).register(net.network, new ExactEvmServerScheme());
    const app = new Hono();
    app.use(
      paymentMiddleware(
        { 'GET /data': { accepts: { scheme: 'exact', price: net.price(PRICE), network: net.network, payTo: seller.address } } },
        resourceServer,
      ),
    );
    app.get('/data', (c) => c.json({ data: 1 }));
    server = await new Promise<Server>((resolve) => {
      const s = serve({ fetch: app.fetch, hostname: '127.0.0.1', port: 0 }, () => resolve(s as Server));
    });
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/data`;
  });
  afterAll(async () => {
    await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
    await net?.stop();
    await database?.close();
    await backend?.dispose();
  });

  /** A reservation as PayWorkflow's policy step makes it, signed (and sent) or not, as a crash could leave it. */
  async function reservation(stage: 'reserved' | 'signed' | 'sent'): Promise<string> {
    const workflowId = `pay/test/${randomBytes(4).toString('hex')}`;
    const probe = await probePayment({ url });
    if (probe.kind !== 'paymentRequired') throw new Error('expected 402');
    const requirement = probe.paymentRequired.accepts[0];
    await ledger.reserveOut({
      workflowId,
      counterparty: requirement.payTo,
      resource: url,
      amount: requirement.amount,
      asset: requirement.asset,
      network: requirement.network,
      dailyBudget: 10n ** 12n,
    });
    if (stage === 'reserved') return workflowId;
    const signed = await signPayment(wallet.privateKey, probe.paymentRequired, requirement);
    await ledger.attachNonce(workflowId, signed.nonce);
    if (stage === 'sent') expect((await sendPaidRequest({ url }, signed)).response.httpStatus).toBe(200);
    return workflowId;
  }

  test('never signed → failed; signed and settled → settled with its transaction; signed, never sent → failed; young rows are left alone', async () => {
    const [unsigned, settled, unsent] = [await reservation('reserved'), await reservation('sent'), await reservation('signed')];
    const young = await reservation('reserved');
    // Nothing is old enough yet: a running pay run's row is never touched.
    expect(await reconcileReserved({ ledger, payer: wallet.address, rpcUrl: net.rpcUrl })).toEqual({ settled: 0, failed: 0, open: 0, undecided: 0 });
    // An hour on (the database's clock is not moved: `now` is), as a sweep then would see them.
    const later = new Date(Date.now() + HOUR + 60_000);
    const report = await reconcileReserved({ ledger, payer: wallet.address, rpcUrl: net.rpcUrl, now: later });
    expect(report).toEqual({ settled: 1, failed: 3, open: 0, undecided: 0 });
    expect(await ledger.getOut(unsigned)).toMatchObject({ status: 'failed', reason: expect.stringContaining('before it signed') });
    expect(await ledger.getOut(settled)).toMatchObject({ status: 'settled', txHash: expect.stringMatching(/^0x[0-9a-f]{64}$/) });
    expect(await ledger.getOut(unsent)).toMatchObject({ status: 'failed', reason: expect.stringContaining('never used') });
    expect(await ledger.getOut(young)).toMatchObject({ status: 'failed' });
    expect(await net.balanceOf(seller.address)).toBe(PRICE);
    // Idempotent: nothing is left to decide.
    expect(await reconcileReserved({ ledger, payer: wallet.address, rpcUrl: net.rpcUrl, now: later })).toEqual({
      settled: 0,
      failed: 0,
      open: 0,
      undecided: 0,
    });
  });

  test('prompt: half a minute on, a settled authorization is settled and a cancelled one failed, while one still usable stays reserved', async () => {
    const [settled, open, cancelled] = [await reservation('sent'), await reservation('signed'), await reservation('signed')];
    const row = await ledger.getOut(cancelled);
    const outcome = await cancelAuthorization(
      net.rpcUrl,
      wallet.privateKey,
      { asset: net.token.address, nonce: row?.paymentNonce as Hex },
      { name: net.token.name, version: net.token.version },
    );
    expect(outcome.sent).toBe(true);
    const soon = new Date(Date.now() + 31_000);
    expect(await reconcileReserved({ ledger, payer: wallet.address, rpcUrl: net.rpcUrl, now: soon })).toEqual({ settled: 1, failed: 1, open: 1, undecided: 0 });
    expect(await ledger.getOut(settled)).toMatchObject({ status: 'settled' });
    expect(await ledger.getOut(cancelled)).toMatchObject({ status: 'failed', reason: expect.stringContaining('cancelled') });
    expect(await ledger.getOut(open)).toMatchObject({ status: 'reserved' });
    // Its validity over (at most MAX_AUTHORIZATION_SECONDS after it was signed), it can never be used: failed.
    await reconcileReserved({ ledger, payer: wallet.address, rpcUrl: net.rpcUrl, now: new Date(Date.now() + HOUR) });
    expect(await ledger.getOut(open)).toMatchObject({ status: 'failed', reason: expect.stringContaining('expired') });
  });

  test('sales: a settlement whose answer was lost stays reserved, then settled from the chain; a sale never settled is failed', async () => {
    // The worker's seller over this ledger, with a facilitator that settles on the chain and then loses its answer
    // (a timeout, a dropped connection): the outcome is unknown to the seller, so the row stays reserved.
    const lossy: FacilitatorClient = {
      verify: (payload, requirements) => net.facilitatorClient.verify(payload, requirements),
      settle: async (payload, requirements) => {
        await net.facilitatorClient.settle(payload, requirements);
        throw new Error('fetch failed: the facilitator did not answer');
      },
      getSupported: () => net.facilitatorClient.getSupported(),
    };
    const errors: string[] = [];
    const shop = await startSeller({
      facilitator: lossy,
      network: net.network,
      offers: async () => [
        {
          tool: 'answer',
          price: PRICE,
          asset: net.token.address,
          assetName: net.token.name,
          assetVersion: net.token.version,
          payTo: seller.address,
          description: 'The answer',
          inputSchema: { type: 'object' },
        },
      ],
      invoke: async () => ({ ok: true, output: 42 }),
      onSale: async (sale) => {
        await recordSale(ledger, sale);
      },
      onError: (err) => errors.push((err as Error).message),
    });
    try {
      const earnedBefore = await net.balanceOf(seller.address);
      const buyer = await net.newWallet(1_000_000n);
      const buyerClient = localBuyerClient(net, buyer, PRICE);
      const sell = async (header?: string) =>
        fetch(`${shop.url}/tools/answer`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', ...(header ? { 'PAYMENT-SIGNATURE': header } : {}) },
          body: '{}',
        });
      const signed = async () => signedPayment(buyerClient, decodePaymentRequiredHeader((await sell()).headers.get('PAYMENT-REQUIRED') as string));

      const lost = await signed();
      expect((await sell(lost.header)).status).not.toBe(200);
      expect(await net.authorizationState(buyer.address, lost.nonce)).toBe(true);
      expect(await net.balanceOf(seller.address)).toBe(earnedBefore + PRICE);
      expect(await ledger.getByNonce('in', lost.nonce)).toMatchObject({ status: 'reserved', tool: 'answer', amount: PRICE.toString() });
      expect(errors.join('\n')).toMatch(/outcome is unknown/);

      // A sale the seller reserved and died before settling: the buyer's authorization is signed but never used.
      const abandoned = await signed();
      await recordSale(ledger, {
        nonce: abandoned.nonce,
        payer: buyer.address,
        tool: 'answer',
        resource: `${shop.url}/tools/answer`,
        amount: PRICE,
        asset: net.token.address,
        network: net.network,
        status: 'reserved',
      });

      // No wallet of ours is needed to decide sales: only the chain.
      const report = await reconcileReserved({ ledger, rpcUrl: net.rpcUrl, now: new Date(Date.now() + HOUR + 60_000) });
      expect(report).toMatchObject({ settled: 1, failed: 1 });
      const settled = await ledger.getByNonce('in', lost.nonce);
      expect(settled).toMatchObject({
        status: 'settled',
        txHash: (await authorizationOnChain(net.rpcUrl, net.token.address, buyer.address, lost.nonce)).txHash,
      });
      expect(settled?.txHash).toMatch(/^0x[0-9a-f]{64}$/);
      expect(await ledger.getByNonce('in', abandoned.nonce)).toMatchObject({ status: 'failed', reason: expect.stringContaining('never used') });
      expect((await ledger.pnl({ by: 'tool', asset: net.token.address })).rows.find((r) => r.key === 'answer')).toMatchObject({ income: PRICE.toString() });

      // The failed one is closed: its authorization, still valid, buys nothing now (the seller does not settle it).
      const refused = await sell(abandoned.header);
      expect(refused.status).toBe(402);
      expect(await net.authorizationState(buyer.address, abandoned.nonce)).toBe(false);
      expect(await net.balanceOf(seller.address)).toBe(earnedBefore + PRICE);
    } finally {
      await shop.close();
    }
  });

  test('without a chain to ask, a signed reservation is left reserved (still counted against the budget), not guessed', async () => {
    const signed = await reservation('signed');
    const later = new Date(Date.now() + HOUR + 60_000);
    expect(await reconcileReserved({ ledger, payer: wallet.address, now: later })).toEqual({ settled: 0, failed: 0, open: 0, undecided: 1 });
    expect(await ledger.getOut(signed)).toMatchObject({ status: 'reserved' });
  });
});
