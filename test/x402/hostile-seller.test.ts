import { decodePaymentSignatureHeader } from '@x402/core/http';
import { databaseKinds, startTestPlatform, useTemporal, type TestPlatform } from '../helpers/platform';
import { startHostileSeller, type HostilePath, type HostileSeller } from '../helpers/hostile-seller';
import { createLedger } from '../../src/x402/ledger';
import { startLocalX402Network, type LocalWallet, type LocalX402Network } from '../../src/x402';
import { PAY_AUTHORIZATION_SECONDS, type PayResult } from '../../src/contract/pay-runs';
import type { Hex } from '../../src/x402/viem';

/*
 * Issue 26, "Payments, round two": a seller that misbehaves on purpose (test/helpers/hostile-seller.ts, the official
 * x402 server pieces on a real local chain) against Forge's paying side. Every case asserts what the chain says and
 * that the ledger, the P&L and the budget agree with it, not merely the run's status: money that moved is `paid` and
 * counted; money that did not move is `failed` only once its authorization can never be used again (cancelled on the
 * chain), and the budget never lets more leave the wallet than it allows.
 */

const PRICE = 10_000n;
const BUYER_FUNDS = 10_000_000n;
/** Room for 10 payments of PRICE: the property test at the end runs into it. */
const DAILY_BUDGET = PRICE * 10n;

const temporal = useTemporal();

describe.each(databaseKinds())('a hostile seller on %s', (kind) => {
  let net: LocalX402Network;
  let buyer: LocalWallet;
  /** Settles 1.5 s after answering 500: within the grace Forge gives a seller's settlement to show on the chain. */
  let quick: HostileSeller;
  /** Settles 15 s after answering 500: Forge has given up and cancelled the authorization by then. */
  let late: HostileSeller;
  let platform: TestPlatform;

  beforeAll(async () => {
    net = await startLocalX402Network();
    buyer = await net.newWallet(BUYER_FUNDS);
    [quick, late] = await Promise.all([
      startHostileSeller(net, { price: PRICE, lateSettleMs: 1500 }),
      startHostileSeller(net, { price: PRICE, lateSettleMs: 15_000 }),
    ]);
    platform = await startTestPlatform(temporal(), kind, {
      env: {
        FORGE_X402_WALLET_KEY: buyer.privateKey,
        FORGE_X402_RPC_URL: net.rpcUrl,
        FORGE_X402_ALLOWED_ASSETS: net.token.address,
        FORGE_X402_DAILY_BUDGET: String(DAILY_BUDGET),
        FORGE_X402_MAX_PER_PAYMENT: String(PRICE * 2n),
        FORGE_REVERIFY_INTERVAL: 'off',
      },
    });
  }, 120_000);

  afterAll(async () => {
    await platform?.teardown();
    await Promise.all([quick?.close(), late?.close()]);
    await net?.stop();
  });

  const ledger = () => createLedger(platform.database);
  const spentOnChain = async () => BUYER_FUNDS - (await net.balanceOf(buyer.address));
  const nonceOf = (signature: string) => (decodePaymentSignatureHeader(signature).payload as { authorization: { nonce: Hex } }).authorization.nonce;

  /** The chain, the ledger and the P&L agree, and the budget held: after every case. */
  async function expectLedgerIsTheChain(): Promise<void> {
    await Promise.all([...quick.lateSettlements, ...late.lateSettlements]);
    const spent = await spentOnChain();
    expect(spent).toBeLessThanOrEqual(DAILY_BUDGET);
    const pnl = await platform.forge.pnl();
    expect(pnl.totals.spend).toBe(spent.toString());
    const paidToSellers = (await net.balanceOf(quick.payee.address)) + (await net.balanceOf(late.payee.address));
    expect(paidToSellers).toBe(spent);
  }

  /** Pays and returns the result with the seller's view of it: what the chain did with the one authorization signed. */
  async function payOnce(seller: HostileSeller, path: HostilePath): Promise<{ result: PayResult; nonce: Hex; movedOnChain: bigint }> {
    const before = await spentOnChain();
    const result = await platform.forge.pay(seller.url(path));
    await Promise.all(seller.lateSettlements);
    const signatures = seller.received.get(path) ?? [];
    expect(signatures).toHaveLength(1);
    return { result, nonce: nonceOf(signatures[0]), movedOnChain: (await spentOnChain()) - before };
  }

  /** A payment that moved nothing is failed, and its authorization can never be used again: cancelled on the chain. */
  async function expectCancelled(result: PayResult, nonce: Hex, movedOnChain: bigint): Promise<void> {
    expect(movedOnChain).toBe(0n);
    expect(result.status).toBe('failed');
    expect(result.reason).toMatch(/cancel/i);
    expect(await net.authorizationState(buyer.address, nonce)).toBe(true);
    expect(await ledger().getOut(result.workflowId)).toMatchObject({ status: 'failed', paymentNonce: nonce });
  }

  test('late settlement after a 500, within the grace: the chain says paid, and so do the run and the ledger', async () => {
    const { result, movedOnChain } = await payOnce(quick, '/late-500');
    const signedBy = Math.ceil(Date.now() / 1000);
    expect(movedOnChain).toBe(PRICE);
    // The seller allowed 300 s; Forge signed for its own short validity only (money in flight lives briefly).
    const { authorization } = decodePaymentSignatureHeader(quick.received.get('/late-500')![0]).payload as { authorization: { validBefore: string } };
    expect(Number(authorization.validBefore)).toBeLessThanOrEqual(signedBy + PAY_AUTHORIZATION_SECONDS);
    expect(result).toMatchObject({ status: 'paid', amount: PRICE.toString(), httpStatus: 500 });
    const settled = quick.settlements.get('/late-500')?.[0];
    expect(settled?.success).toBe(true);
    expect(result.txHash).toBe(settled?.transaction);
    expect(await ledger().getOut(result.workflowId)).toMatchObject({ status: 'settled', txHash: settled?.transaction });
    await expectLedgerIsTheChain();
  }, 90_000);

  test('late settlement after a 500, past the grace: Forge cancels the authorization on the chain first, so the late settle fails and nothing moves', async () => {
    const { result, nonce, movedOnChain } = await payOnce(late, '/late-500');
    await expectCancelled(result, nonce, movedOnChain);
    expect(late.settlements.get('/late-500')?.[0]?.success).not.toBe(true);
    await expectLedgerIsTheChain();
  }, 90_000);

  test('a fake receipt (a success PAYMENT-RESPONSE naming a transaction that does not exist) is not a payment', async () => {
    const { result, nonce, movedOnChain } = await payOnce(quick, '/fake-receipt');
    await expectCancelled(result, nonce, movedOnChain);
    expect(result.reason).toContain('0x' + 'ab'.repeat(32));
    await expectLedgerIsTheChain();
  }, 90_000);

  test('an answer without settlement, a redirect, or new terms on the paid request: never followed or signed again, cancelled', async () => {
    for (const path of ['/silent', '/redirect', '/changing-terms'] as const) {
      const { result, nonce, movedOnChain } = await payOnce(quick, path);
      await expectCancelled(result, nonce, movedOnChain);
    }
    // The redirect was not followed: the target saw no payment.
    expect(quick.received.get('/honest')).toBeUndefined();
    await expectLedgerIsTheChain();
  }, 120_000);

  test('settled, then answered 402: the chain says paid; the run says so and that the answer was a 402', async () => {
    const { result, movedOnChain } = await payOnce(quick, '/settle-then-402');
    expect(movedOnChain).toBe(PRICE);
    expect(result).toMatchObject({ status: 'paid', httpStatus: 402 });
    expect(result.reason).toContain('402');
    await expectLedgerIsTheChain();
  }, 90_000);

  test('terms Forge cannot sign or cancel (permit2): refused at once, naming the field; nothing reserved, signed or retried', async () => {
    const started = Date.now();
    const result = await platform.forge.pay(quick.url('/permit2'));
    expect(result).toMatchObject({ status: 'refused', limit: 'scheme' });
    expect(result.reason).toContain('assetTransferMethod');
    expect(Date.now() - started).toBeLessThan(20_000);
    expect(quick.received.get('/permit2')).toBeUndefined();
    expect(await ledger().getOut(result.workflowId)).toBeUndefined();
    const history = await temporal().client.workflow.getHandle(result.workflowId).fetchHistory();
    const retried = (history.events ?? []).filter((e) => (e.activityTaskStartedEventAttributes?.attempt ?? 1) > 1);
    expect(retried).toHaveLength(0);
    await expectLedgerIsTheChain();
  }, 60_000);

  test('endless bodies, on the 402 and on the paid answer, are read only up to the cap', async () => {
    const terms = await platform.forge.pay(quick.url('/huge-402'));
    expect(terms.status).toBe('paid');
    const paid = await platform.forge.pay(quick.url('/huge-200'));
    expect(paid).toMatchObject({ status: 'paid', bodyTruncated: true });
    // The seller would have written 1 GiB each; the reader hung up after its cap (plus what the sockets buffer).
    expect(quick.bodyBytesWritten.get('/huge-402')).toBeLessThan(32 * 1024 * 1024);
    expect(quick.bodyBytesWritten.get('/huge-200')).toBeLessThan(32 * 1024 * 1024);
    await expectLedgerIsTheChain();
  }, 90_000);

  test('a network other than the configured chain is refused before signing, even with no FORGE_X402_ALLOWED_NETWORKS', async () => {
    const result = await platform.forge.pay(quick.url('/other-chain'));
    expect(result).toMatchObject({ status: 'refused', limit: 'network' });
    expect(quick.received.get('/other-chain')).toBeUndefined();
  }, 60_000);

  test('a URL with credentials is refused before anything starts, without echoing them', async () => {
    const url = quick.url('/honest').replace('http://', 'http://agent:hunter2-secret@');
    const error = await platform.forge.pay(url).then(
      () => undefined,
      (err: Error) => err,
    );
    expect(error?.message).toMatch(/credentials/);
    expect(error?.message).not.toContain('hunter2-secret');
    expect(quick.received.get('/honest')).toBeUndefined();
  });

  test('an idempotency key: a retried pay joins the first run instead of paying again', async () => {
    const before = await spentOnChain();
    const [first, second] = await Promise.all([
      platform.forge.pay(quick.url('/honest'), { idempotencyKey: `order-${kind}-1` }),
      platform.forge.pay(quick.url('/honest'), { idempotencyKey: `order-${kind}-1` }),
    ]);
    const third = await platform.forge.pay(quick.url('/honest'), { idempotencyKey: `order-${kind}-1` });
    expect(first.status).toBe('paid');
    expect(second.workflowId).toBe(first.workflowId);
    expect(third).toMatchObject({ workflowId: first.workflowId, status: 'paid', txHash: first.txHash, body: first.body });
    expect((await spentOnChain()) - before).toBe(PRICE);
    await expectLedgerIsTheChain();
  }, 90_000);

  test('property: concurrent mixes of honest and hostile sellers never spend more on the chain than the daily budget, and the P&L is the chain', async () => {
    const paths: HostilePath[] = ['/honest', '/late-500', '/fake-receipt', '/settle-then-402', '/silent'];
    for (let round = 0; round < 3; round++) {
      const mix = Array.from({ length: 6 }, (_, i) => ({ seller: (i + round) % 3 === 0 ? late : quick, path: paths[(i * 7 + round) % paths.length] }));
      const results = await Promise.all(mix.map(({ seller, path }) => platform.forge.pay(seller.url(path))));
      for (const r of results) expect(['paid', 'failed', 'refused']).toContain(r.status);
      await expectLedgerIsTheChain();
    }
    // The budget was reached: some were refused by it, and what left the wallet is within it.
    expect(await spentOnChain()).toBeLessThanOrEqual(DAILY_BUDGET);
  }, 300_000);
});
