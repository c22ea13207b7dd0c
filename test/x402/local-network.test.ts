import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import { serve } from '@hono/node-server';
import { Hono } from 'hono';
import { decodePaymentRequiredHeader, decodePaymentResponseHeader, decodePaymentSignatureHeader } from '@x402/core/http';
import { x402ResourceServer } from '@x402/core/server';
import { ExactEvmScheme as ExactEvmServerScheme } from '@x402/evm/exact/server';
import { wrapFetchWithPayment } from '@x402/fetch';
import { paymentMiddleware } from '@x402/hono';
import { LOCAL_CHAIN_ID, startLocalX402Network, type LocalWallet, type LocalX402Network } from '../../src/x402';
import { viem } from '../../src/x402/viem';
import { localBuyerClient } from '../helpers/x402-buyer';

// The local x402 network end to end, on loopback with ports the kernel picks: a real anvil chain, the EIP-3009 token
// deployed from its shipped bytecode, the official facilitator settling on it, a seller with the official Hono
// middleware and a buyer with @x402/fetch. Balances are read from the chain, not from anything the packages report.

const PRICE = 25_000n; // 0.025 of a 6-decimals token
const BUYER_FUNDS = 1_000_000n;

let net: LocalX402Network;
let seller: LocalWallet;
let buyer: LocalWallet;
let server: Server;
let url: string;
/** Every PAYMENT-SIGNATURE header the buyer's fetch sent, in order. */
const sentPayments: string[] = [];

beforeAll(async () => {
  net = await startLocalX402Network();
  [seller, buyer] = await Promise.all([net.newWallet(), net.newWallet(BUYER_FUNDS)]);

  const resourceServer = new x402ResourceServer(net.facilitatorClient).register(net.network, new ExactEvmServerScheme());
  const app = new Hono();
  app.use(
    paymentMiddleware(
      {
        'GET /report': {
          accepts: { scheme: 'exact', price: net.price(PRICE), network: net.network, payTo: seller.address },
          description: 'A paid report',
          mimeType: 'application/json',
        },
      },
      resourceServer,
    ),
  );
  app.get('/report', (c) => c.json({ report: 'paid content' }));
  server = await new Promise<Server>((resolve) => {
    const s = serve({ fetch: app.fetch, hostname: '127.0.0.1', port: 0 }, () => resolve(s as Server));
  });
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/report`;
});

afterAll(async () => {
  await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
  await net?.stop();
});

test('the chain is local: chain id 31337, the token deployed with its EIP-712 domain, Multicall3 in place', async () => {
  const client = viem.createPublicClient({ transport: viem.http(net.rpcUrl) });
  expect(await client.getChainId()).toBe(LOCAL_CHAIN_ID);
  expect(net.network).toBe('eip155:31337');
  expect(net.rpcUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
  const domain = await client.readContract({
    address: net.token.address,
    abi: [
      {
        type: 'function',
        name: 'eip712Domain',
        stateMutability: 'view',
        inputs: [],
        outputs: [
          { name: 'fields', type: 'bytes1' },
          { name: 'name', type: 'string' },
          { name: 'version', type: 'string' },
          { name: 'chainId', type: 'uint256' },
          { name: 'verifyingContract', type: 'address' },
          { name: 'salt', type: 'bytes32' },
          { name: 'extensions', type: 'uint256[]' },
        ],
      },
    ] as const,
    functionName: 'eip712Domain',
  });
  expect(domain.slice(1, 5)).toEqual([net.token.name, net.token.version, 31337n, net.token.address]);
  expect(await net.balanceOf(buyer.address)).toBe(BUYER_FUNDS);
  expect(await net.balanceOf(seller.address)).toBe(0n);
  expect(await client.getCode({ address: '0xcA11bde05977b3631167028862bE2a173976CA11' })).toMatch(/^0x[0-9a-f]{100,}$/);
});

test('an unpaid request gets 402 with the terms: the token, the price, the payee, the network', async () => {
  const res = await fetch(url);
  expect(res.status).toBe(402);
  const header = res.headers.get('PAYMENT-REQUIRED');
  expect(header).toBeTruthy();
  const required = decodePaymentRequiredHeader(header as string);
  expect(required.x402Version).toBe(2);
  expect(required.accepts).toHaveLength(1);
  expect(required.accepts[0]).toMatchObject({
    scheme: 'exact',
    network: 'eip155:31337',
    amount: PRICE.toString(),
    asset: net.token.address,
    payTo: seller.address,
    extra: { name: net.token.name, version: net.token.version },
  });
  expect(await net.balanceOf(buyer.address)).toBe(BUYER_FUNDS);
});

test('a paid request gets 200, settles on the chain, and moves exactly the price', async () => {
  const recordingFetch: typeof fetch = async (input, init) => {
    const request = new Request(input, init);
    const payment = request.headers.get('PAYMENT-SIGNATURE');
    if (payment) sentPayments.push(payment);
    return fetch(request);
  };
  // The client's spend controls allow only assets it knows (USDC and the like) unless told: the local token is
  // allowed here, capped at the price.
  const client = localBuyerClient(net, buyer, PRICE);
  const payingFetch = wrapFetchWithPayment(recordingFetch, client);

  const res = await payingFetch(url);
  expect(res.status).toBe(200);
  expect(await res.json()).toEqual({ report: 'paid content' });
  expect(sentPayments).toHaveLength(1);

  const settlement = decodePaymentResponseHeader(res.headers.get('PAYMENT-RESPONSE') as string);
  expect(settlement).toMatchObject({ success: true, network: 'eip155:31337', payer: buyer.address });
  const receipt = await viem.createPublicClient({ transport: viem.http(net.rpcUrl) }).getTransactionReceipt({ hash: settlement.transaction as `0x${string}` });
  expect(receipt.status).toBe('success');
  expect(receipt.from.toLowerCase()).toBe(net.facilitatorAddress.toLowerCase());
  expect(receipt.to?.toLowerCase()).toBe(net.token.address.toLowerCase());

  expect(await net.balanceOf(buyer.address)).toBe(BUYER_FUNDS - PRICE);
  expect(await net.balanceOf(seller.address)).toBe(PRICE);
  const { authorization } = decodePaymentSignatureHeader(sentPayments[0]).payload as { authorization: { nonce: `0x${string}` } };
  expect(await net.authorizationState(buyer.address, authorization.nonce)).toBe(true);
});

test('replaying the same payment payload is refused: the nonce is used, no token moves', async () => {
  expect(sentPayments).toHaveLength(1);
  const res = await fetch(url, { headers: { 'PAYMENT-SIGNATURE': sentPayments[0] } });
  expect(res.status).toBe(402);
  const required = decodePaymentRequiredHeader(res.headers.get('PAYMENT-REQUIRED') as string);
  // The facilitator's own diagnosis (through Multicall3's tryAggregate, as on a real chain).
  expect(required.error).toBe('invalid_exact_evm_nonce_already_used');
  expect(res.headers.get('PAYMENT-RESPONSE')).toBeNull();
  expect(await net.balanceOf(buyer.address)).toBe(BUYER_FUNDS - PRICE);
  expect(await net.balanceOf(seller.address)).toBe(PRICE);
});

test('networks are independent and stop() ends one: its RPC port no longer answers, a second stop() is a no-op', async () => {
  const other = await startLocalX402Network();
  expect(other.rpcUrl).not.toBe(net.rpcUrl);
  expect(other.token.address).toMatch(/^0x[0-9a-fA-F]{40}$/);
  const chainId = () =>
    fetch(other.rpcUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'eth_chainId', params: [] }),
    });
  expect((await chainId()).ok).toBe(true);
  await other.stop();
  await other.stop();
  await expect(chainId()).rejects.toThrow();
  // The first network is untouched.
  expect(await net.balanceOf(buyer.address)).toBe(BUYER_FUNDS - PRICE);
});
