import { readFileSync } from 'node:fs';
import path from 'node:path';
import { decodePaymentRequiredHeader } from '@x402/core/http';
import { wrapFetchWithPayment } from '@x402/fetch';
import { adderTool } from '../helpers/tools';
import { startTestPlatform, useTemporal, type TestPlatform } from '../helpers/platform';
import { createLedger, PNL_NO_TOOL } from '../../src/x402/ledger';
import { startFacilitatorServer, type FacilitatorServer } from '../../src/x402/facilitator-server';
import { startLocalX402Network, type LocalWallet, type LocalX402Network } from '../../src/x402';
import { localBuyerClient } from '../helpers/x402-buyer';

// Selling a deployed tool through the worker's seller (SellToolWorkflow, src/x402/sales.ts), bought by an outside
// buyer with @x402/fetch and by Forge itself with PayWorkflow; discovery through the facilitator's bazaar catalogue;
// the P&L from the ledger. A real chain, the official facilitator over HTTP, balances read from the chain.

const PRICE = 40_000n;
const FUNDS = 5_000_000n;
const temporal = useTemporal();

describe('selling a tool over x402', () => {
  let net: LocalX402Network;
  let facilitator: FacilitatorServer;
  let payee: LocalWallet;
  let forgeWallet: LocalWallet;
  let buyer: LocalWallet;
  let platform: TestPlatform;
  const logs: string[] = [];
  let url: string;

  beforeAll(async () => {
    net = await startLocalX402Network();
    facilitator = await startFacilitatorServer({ facilitator: net.facilitator });
    [payee, forgeWallet, buyer] = await Promise.all([net.newWallet(), net.newWallet(FUNDS), net.newWallet(FUNDS)]);
    platform = await startTestPlatform(temporal(), 'pglite', {
      env: {
        FORGE_X402_WALLET_KEY: forgeWallet.privateKey,
        FORGE_X402_RPC_URL: net.rpcUrl,
        FORGE_X402_ALLOWED_ASSETS: net.token.address,
        FORGE_X402_FACILITATOR_URL: facilitator.url,
        FORGE_X402_SELL_ASSET: net.token.address,
        FORGE_X402_SELL_NETWORK: net.network,
        FORGE_X402_PAY_TO: payee.address,
        FORGE_REVERIFY_INTERVAL: 'off',
      },
      log: (line) => logs.push(line),
    });
    const deployed = await platform.forge.deployTool({ name: 'adder', source: adderTool('sold'), testInput: { a: 1, b: 2 } });
    expect(deployed.status).toBe('active');
  });

  afterAll(async () => {
    await platform?.teardown();
    await facilitator?.close();
    await net?.stop();
  });

  test('a tool that is not active is not sold: refused, saying what to do', async () => {
    const result = await platform.forge.sell('nothing_here', { price: PRICE });
    expect(result).toMatchObject({ status: 'refused' });
    expect(result.reason).toContain('deploy it first');
  });

  test('forge sell offers the tool: unpaid 402 with the terms, a paid call 200 with its output, tokens moved, a settled income row', async () => {
    const offered = await platform.forge.sell('adder', { price: PRICE });
    expect(offered).toMatchObject({
      status: 'offered',
      tool: 'adder',
      price: PRICE.toString(),
      asset: net.token.address,
      network: net.network,
      payTo: payee.address,
    });
    url = offered.url!;
    expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/tools\/adder$/);

    const unpaid = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ a: 2, b: 3 }) });
    expect(unpaid.status).toBe(402);

    const client = localBuyerClient(net, buyer, PRICE);
    const paid = await wrapFetchWithPayment(fetch, client)(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ a: 2, b: 3 }),
    });
    expect(paid.status).toBe(200);
    expect(await paid.json()).toMatchObject({ output: { sum: 5, variant: 'sold' } });
    expect(await net.balanceOf(buyer.address)).toBe(FUNDS - PRICE);
    expect(await net.balanceOf(payee.address)).toBe(PRICE);

    const pnl = await platform.forge.pnl({ by: 'tool' });
    expect(pnl.rows).toEqual([expect.objectContaining({ key: 'adder', income: PRICE.toString(), spend: '0', net: PRICE.toString() })]);
  });

  test("a price in money as x402 writes it ($0.04) is base units at the token's decimals; one finer than them is refused as bad input", async () => {
    // The same price as above, so the sale the next tests make is unchanged.
    const money = await platform.forge.sell('adder', { price: '$0.04' });
    expect(money).toMatchObject({ status: 'offered', price: PRICE.toString(), priceGiven: '$0.04', decimals: net.token.decimals, priceInTokens: '0.04' });
    expect(await platform.forge.sell('adder', { price: '0.04 USD' })).toMatchObject({ status: 'offered', price: PRICE.toString(), priceGiven: '0.04 USD' });
    // Base units say what they come to as well.
    expect(await platform.forge.sell('adder', { price: PRICE })).toMatchObject({ status: 'offered', price: PRICE.toString(), priceInTokens: '0.04' });
    expect((await platform.forge.sell('adder', { price: PRICE })).priceGiven).toBeUndefined();

    const fine = await platform.forge.sell('adder', { price: '$0.0000001' });
    expect(fine).toMatchObject({ status: 'refused', problem: 'price' });
    expect(fine.reason).toContain(`finer than the sale asset's ${net.token.decimals} decimals allow`);
    expect(fine.reason).toContain('$0.000001');
    // Not representable, nothing changed: the offer stands at its price.
    const unpaid = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ a: 1, b: 1 }) });
    expect(unpaid.status).toBe(402);
    expect(decodePaymentRequiredHeader(unpaid.headers.get('payment-required') as string).accepts[0].amount).toBe(PRICE.toString());

    // A bare decimal is ambiguous (money to x402, base units to Forge): bad input before anything starts.
    await expect(platform.forge.sell('adder', { price: '0.04' })).rejects.toMatchObject({
      name: 'ForgeInputError',
      message: expect.stringContaining('ambiguous: write $0.04'),
    });
  });

  test('discovery lists the sold tool with its input schema; a query filters', async () => {
    const all = await platform.forge.discoverServices();
    expect(all.facilitatorUrl).toBe(facilitator.url);
    const adder = all.services.find((s) => s.url === url);
    expect(adder).toMatchObject({ method: 'POST', price: PRICE.toString(), network: net.network });
    expect(JSON.stringify(adder?.inputSchema)).toContain('"a"');
    expect((await platform.forge.discoverServices({ query: 'Adds numbers' })).services.map((s) => s.url)).toContain(url);
    expect((await platform.forge.discoverServices({ query: 'weather forecast' })).services).toEqual([]);
  });

  test('Forge buys its own tool through PayWorkflow: the P&L shows the income, the spend and the net', async () => {
    const result = await platform.forge.pay(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ a: 20, b: 22 }) });
    expect(result).toMatchObject({ status: 'paid', httpStatus: 200, amount: PRICE.toString() });
    expect(JSON.parse(result.body!)).toMatchObject({ output: { sum: 42 } });
    expect(await net.balanceOf(forgeWallet.address)).toBe(FUNDS - PRICE);
    const ledger = createLedger(platform.database);
    expect(await ledger.getOut(result.workflowId)).toMatchObject({ status: 'settled' });

    const byTool = await platform.forge.pnl({ by: 'tool' });
    expect(byTool.rows).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ key: 'adder', income: (PRICE * 2n).toString(), spend: '0' }),
        expect.objectContaining({ key: PNL_NO_TOOL, income: '0', spend: PRICE.toString() }),
      ]),
    );
    expect(byTool.totals).toEqual({ income: (PRICE * 2n).toString(), spend: PRICE.toString(), net: PRICE.toString() });
    const byDay = await platform.forge.pnl({ by: 'day' });
    expect(byDay.rows).toHaveLength(1);
    expect(byDay.rows[0].key).toBe(new Date().toISOString().slice(0, 10));
  });

  test('withdrawn: the route answers 404 and discovery drops it', async () => {
    // The facilitator is the test's, not the worker's own: it looks again at the seller's routes for the seller only,
    // once told the seller's token (the worker's private file) and origin, as an operator would tell it.
    const token = readFileSync(path.join(platform.home, 'x402-discovery.token'), 'utf8').trim();
    facilitator.addRegistrant({ token, origin: new URL(url).origin });
    expect(await platform.forge.sell('adder', { stop: true })).toMatchObject({ status: 'withdrawn' });
    expect((await fetch(url, { method: 'POST', body: '{}' })).status).toBe(404);
    expect((await platform.forge.discoverServices()).services.map((s) => s.url)).not.toContain(url);
  });

  test('the wallet key is in no worker log line', () => {
    expect(logs.join('\n')).toContain(forgeWallet.address);
    expect(logs.join('\n').toLowerCase()).not.toContain(forgeWallet.privateKey.slice(2).toLowerCase());
  });
});
