import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import { serve } from '@hono/node-server';
import { Hono } from 'hono';
import { decodePaymentSignatureHeader } from '@x402/core/http';
import { x402ResourceServer } from '@x402/core/server';
import { ExactEvmScheme as ExactEvmServerScheme } from '@x402/evm/exact/server';
import { paymentMiddleware } from '@x402/hono';
import { databaseKinds, startTestPlatform, useTemporal, type TestPlatform } from '../helpers/platform';
import { createLedger, LEDGER_MIGRATION_NAME } from '../../src/x402/ledger';
import { startLocalX402Network, type LocalWallet, type LocalX402Network } from '../../src/x402';
import type { PayResult } from '../../src/contract/pay-runs';

// Paying through PayWorkflow, end to end on loopback: a real local chain with the EIP-3009 token, the official
// facilitator settling on it, a seller with the official Hono middleware, and Forge's worker paying with its own
// wallet. Balances are read from the chain; the ledger from the database.

const PRICE = 25_000n;
const BUYER_FUNDS = 10_000_000n;
/** Fits exactly 7 payments of PRICE. */
const DAILY_BUDGET = PRICE * 7n + PRICE / 2n;

const temporal = useTemporal();

describe.each(databaseKinds())('paying over x402 on %s', (kind) => {
  let net: LocalX402Network;
  let seller: LocalWallet;
  let buyer: LocalWallet;
  let server: Server;
  let base: string;
  let platform: TestPlatform;
  /** Every PAYMENT-SIGNATURE the seller received, in order. */
  const received: string[] = [];

  beforeAll(async () => {
    net = await startLocalX402Network();
    [seller, buyer] = await Promise.all([net.newWallet(), net.newWallet(BUYER_FUNDS)]);
    const resourceServer = new x402ResourceServer(net.facilitatorClient).register(net.network, new ExactEvmServerScheme());
    const accepts = { scheme: 'exact', price: net.price(PRICE), network: net.network, payTo: seller.address };
    const app = new Hono();
    app.use(async (c, next) => {
      const payment = c.req.header('PAYMENT-SIGNATURE');
      if (payment) received.push(payment);
      await next();
    });
    app.use(
      paymentMiddleware(
        {
          'GET /report': { accepts, description: 'A paid report', mimeType: 'application/json' },
          'POST /expensive': { accepts: { ...accepts, price: net.price(PRICE * 100n) }, description: 'Too dear', mimeType: 'application/json' },
        },
        resourceServer,
      ),
    );
    app.get('/report', (c) => c.json({ report: 'paid content' }));
    app.post('/expensive', (c) => c.json({ never: 'reached' }));
    app.get('/free', (c) => c.json({ free: true }));
    server = await new Promise<Server>((resolve) => {
      const s = serve({ fetch: app.fetch, hostname: '127.0.0.1', port: 0 }, () => resolve(s as Server));
    });
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    platform = await startTestPlatform(temporal(), kind, {
      env: {
        FORGE_X402_WALLET_KEY: buyer.privateKey,
        FORGE_X402_RPC_URL: net.rpcUrl,
        FORGE_X402_ALLOWED_ASSETS: net.token.address,
        FORGE_X402_DAILY_BUDGET: String(DAILY_BUDGET),
        FORGE_X402_MAX_PER_PAYMENT: String(PRICE * 10n),
        FORGE_REVERIFY_INTERVAL: 'off',
      },
    });
  });

  afterAll(async () => {
    await platform?.teardown();
    await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
    await net?.stop();
  });

  const ledger = () => createLedger(platform.database);

  test('a paid request: 200 with the content, the price moves on the chain, one settled ledger row, the ledger made by a migration run', async () => {
    const result = await platform.forge.pay(`${base}/report`);
    expect(result).toMatchObject({
      status: 'paid',
      httpStatus: 200,
      amount: PRICE.toString(),
      asset: net.token.address,
      network: 'eip155:31337',
      payTo: seller.address,
    });
    expect(JSON.parse(result.body!)).toEqual({ report: 'paid content' });
    expect(result.txHash).toMatch(/^0x[0-9a-f]{64}$/);
    expect(await net.balanceOf(buyer.address)).toBe(BUYER_FUNDS - PRICE);
    expect(await net.balanceOf(seller.address)).toBe(PRICE);
    expect(received).toHaveLength(1);

    const row = await ledger().getOut(result.workflowId);
    expect(row).toMatchObject({ direction: 'out', status: 'settled', amount: PRICE.toString(), txHash: result.txHash });
    const { authorization } = decodePaymentSignatureHeader(received[0]).payload as { authorization: { nonce: string } };
    expect(row?.paymentNonce).toBe(authorization.nonce);
    // Forge extended its own schema the way the agent would: the ledger is an applied agent migration.
    const migrations = await platform.forge.listMigrations();
    expect(migrations.migrations.map((m) => m.name)).toContain(LEDGER_MIGRATION_NAME);
  });

  test('a free resource is returned as it is, with amount 0 and nothing signed', async () => {
    const before = received.length;
    const result = await platform.forge.pay(`${base}/free`);
    expect(result).toMatchObject({ status: 'paid', httpStatus: 200, amount: '0' });
    expect(received).toHaveLength(before);
    expect(await ledger().getOut(result.workflowId)).toBeUndefined();
  });

  test('over the per-payment maximum (configured, or lowered by maxAmount): refused before signing, naming the limit and the amounts', async () => {
    const before = received.length;
    const dear = await platform.forge.pay(`${base}/expensive`, { method: 'POST', body: '{}' });
    expect(dear).toMatchObject({ status: 'refused', limit: 'maxPerPayment', amount: (PRICE * 100n).toString() });
    expect(dear.reason).toContain(`over the per-payment maximum ${PRICE * 10n}`);
    const capped = await platform.forge.pay(`${base}/report`, { maxAmount: PRICE - 1n });
    expect(capped).toMatchObject({ status: 'refused', limit: 'maxPerPayment' });
    expect(capped.reason).toContain(`over the per-payment maximum ${PRICE - 1n} set for this payment`);
    expect(capped.reason).not.toContain('--max');
    // Nothing was signed: the seller saw no payment, no ledger row was made, and no sign step was even scheduled.
    expect(received).toHaveLength(before);
    for (const r of [dear, capped]) {
      expect(await ledger().getOut(r.workflowId)).toBeUndefined();
      expect(await scheduledActivities(r.workflowId)).not.toContain('signPayment');
    }
  });

  test('20 concurrent payments never overspend the daily budget: exactly what fits is paid, the rest refused unsigned', async () => {
    const spentBefore = BUYER_FUNDS - (await net.balanceOf(buyer.address));
    const fits = Number((DAILY_BUDGET - spentBefore) / PRICE);
    const receivedBefore = received.length;
    const results: PayResult[] = await Promise.all(Array.from({ length: 20 }, () => platform.forge.pay(`${base}/report`)));
    const paid = results.filter((r) => r.status === 'paid');
    const refused = results.filter((r) => r.status === 'refused');
    expect(paid).toHaveLength(fits);
    expect(refused).toHaveLength(20 - fits);
    for (const r of refused) {
      expect(r.limit).toBe('dailyBudget');
      expect(r.reason).toContain(`over the daily budget ${DAILY_BUDGET}`);
    }
    expect(BUYER_FUNDS - (await net.balanceOf(buyer.address))).toBe(spentBefore + PRICE * BigInt(fits));
    expect(BUYER_FUNDS - (await net.balanceOf(buyer.address))).toBeLessThanOrEqual(DAILY_BUDGET);
    expect(received.length - receivedBefore).toBe(fits);
    const rows = await Promise.all(paid.map((r) => ledger().getOut(r.workflowId)));
    expect(rows.map((r) => r?.status)).toEqual(paid.map(() => 'settled'));
  }, 120_000);

  test('the wallet key is in no run history, result or worker log line', async () => {
    const { client } = temporal();
    const key = buyer.privateKey.slice(2).toLowerCase();
    let histories = 0;
    for await (const execution of client.workflow.list({ query: `WorkflowType = 'payWorkflow' AND TaskQueue = '${platform.config.taskQueues.control}'` })) {
      const history = await client.workflow.getHandle(execution.workflowId, execution.runId).fetchHistory();
      expect(JSON.stringify(history).toLowerCase()).not.toContain(key);
      histories++;
    }
    expect(histories).toBeGreaterThan(20);
    // Nor in the configuration as a value (it is a closure there), which a dump of the config would print.
    const dump = JSON.stringify(platform.config, (_k, v: unknown) => (typeof v === 'bigint' ? v.toString() : v));
    expect(dump.toLowerCase()).not.toContain(key);
    expect(platform.config.x402.walletKey()).toBe(buyer.privateKey);
  }, 60_000);

  async function scheduledActivities(workflowId: string): Promise<string[]> {
    const history = await temporal().client.workflow.getHandle(workflowId).fetchHistory();
    return (history.events ?? []).flatMap((e) =>
      e.activityTaskScheduledEventAttributes?.activityType?.name ? [e.activityTaskScheduledEventAttributes.activityType.name] : [],
    );
  }
});
