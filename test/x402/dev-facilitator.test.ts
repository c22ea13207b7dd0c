import { randomBytes } from 'node:crypto';
import { createServer, type Server, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { HTTPFacilitatorClient, decodePaymentRequiredHeader } from '@x402/core/http';
import type { PaymentRequired } from '@x402/core/types';
import { startLocalX402Network, type LocalWallet, type LocalX402Network } from '../../src/x402';
import { discoverServices } from '../../src/x402/discovery';
import { startFacilitatorServer, type FacilitatorServer } from '../../src/x402/facilitator-server';
import { startSeller, type Offer, type Seller } from '../../src/x402/seller';
import { localBuyerClient } from '../helpers/x402-buyer';

// Issue 26: the dev facilitator is no port scanner and its catalogue changes only by an entry's owner. Every case
// asserts the harm did not happen, from outside: a loopback listener of the test's own counts every connection made to
// it, and the catalogue is compared whole (terms, payee, lastUpdated) before and after.

let net: LocalX402Network;
let facilitator: FacilitatorServer;
let payee: LocalWallet;
let seller: Seller;
const token = randomBytes(32).toString('base64url');

/** A TCP listener on loopback that only counts who connects (and closes them). */
async function countingListener(): Promise<{ port: number; connections: () => number; close: () => Promise<void> }> {
  let count = 0;
  const sockets = new Set<Socket>();
  const server: Server = createServer((socket) => {
    count += 1;
    sockets.add(socket);
    socket.destroy();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    connections: () => count,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** A loopback port nothing listens on: one the kernel gave, then closed. */
async function closedPort(): Promise<number> {
  const l = await countingListener();
  await l.close();
  return l.port;
}

const register = (resource: string, headers: Record<string, string> = {}) =>
  fetch(`${facilitator.url}/discovery/register`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify({ resource, method: 'POST' }),
  });
const bearer = { authorization: `Bearer ${token}` };

/** Every way 127.0.0.1 (and loopback generally) is written, at `port`. */
const loopbackUrls = (port: number) => [
  `http://127.0.0.1:${port}/tools/x`,
  `http://2130706433:${port}/tools/x`,
  `http://0x7f000001:${port}/tools/x`,
  `http://017700000001:${port}/tools/x`,
  `http://127.1:${port}/tools/x`,
  `http://[::ffff:127.0.0.1]:${port}/tools/x`,
  `http://localhost:${port}/tools/x`,
  `http://LOCALHOST.:${port}/tools/x`,
  `http://0.0.0.0:${port}/tools/x`,
  `http://[::1]:${port}/tools/x`,
  `http://127.0.0.2:${port}/tools/x`,
];

function sumOffer(price: bigint): Offer {
  return {
    tool: 'sum',
    price,
    asset: net.token.address,
    assetName: net.token.name,
    assetVersion: net.token.version,
    payTo: payee.address,
    description: 'Adds two numbers',
    inputSchema: { type: 'object', properties: { a: { type: 'number' }, b: { type: 'number' } }, required: ['a', 'b'] },
  };
}

beforeAll(async () => {
  net = await startLocalX402Network();
  payee = await net.newWallet();
  facilitator = await startFacilitatorServer({ facilitator: net.facilitator });
  seller = await startSeller({
    facilitator: new HTTPFacilitatorClient({ url: facilitator.url }),
    network: net.network,
    offers: async () => [sumOffer(10_000n)],
    invoke: async (_tool, input) => ({ ok: true, output: (input as { a: number; b: number }).a + (input as { a: number; b: number }).b }),
    onSale: () => undefined,
    discoveryUrl: facilitator.url,
    discoveryToken: token,
    onListening: (origin) => void facilitator.addRegistrant({ token, origin }),
  });
});

afterAll(async () => {
  await seller?.close();
  await facilitator?.close();
  await net?.stop();
});

test("the seller's own registration works: its tool is listed before anyone paid", async () => {
  expect(facilitator.resources().map((r) => r.resource)).toEqual([`${seller.url}/tools/sum`]);
});

test('without the token: 401, nothing fetched, and an open port answers exactly as a closed one', async () => {
  const listener = await countingListener();
  const closed = await closedPort();
  try {
    const answers: string[] = [];
    for (const headers of [{}, { authorization: 'Bearer not-the-token-at-all-0123456789' }, { authorization: token }] as Record<string, string>[]) {
      for (const port of [listener.port, closed]) {
        for (const url of [`http://127.0.0.1:${port}/`, `http://localhost:${port}/anything`]) {
          const res = await register(url, headers);
          expect(res.status).toBe(401);
          answers.push(`${res.status} ${await res.text()}`);
        }
      }
    }
    expect(new Set(answers).size).toBe(1);
    // The seller's own URL, too: the token is what is asked first.
    expect((await register(`${seller.url}/tools/sum`)).status).toBe(401);
    await new Promise((r) => setTimeout(r, 200));
    expect(listener.connections()).toBe(0);
  } finally {
    await listener.close();
  }
});

test('with the token, a URL at loopback however written, or any origin but its own, is refused before a connection', async () => {
  const listener = await countingListener();
  const closed = await closedPort();
  try {
    const before = JSON.stringify(facilitator.resources());
    const bodies = new Map<number, string[]>();
    for (const port of [listener.port, closed]) {
      const answers: string[] = [];
      for (const url of [...loopbackUrls(port), `http://10.0.0.1:${port}/`, `http://169.254.169.254:${port}/latest/meta-data/`, `http://[fe80::1]:${port}/`]) {
        const res = await register(url, bearer);
        expect([url, res.status]).toEqual([url, 403]);
        answers.push(await res.text());
      }
      bodies.set(port, answers);
    }
    // Open and closed ports: the same answers, word for word (no port is named in them).
    expect(bodies.get(listener.port)).toEqual(bodies.get(closed));
    expect(bodies.get(closed)!.join('\n')).not.toContain(String(closed));
    // A public-looking origin that is not the seller's is refused too (it registers only what it serves).
    const other = await register('http://203.0.113.7/tools/sum', bearer);
    expect(other.status).toBe(403);
    expect(((await other.json()) as { error: string }).error).toContain('not the origin you serve');
    // Credentials in the URL, another scheme: bad input.
    expect((await register(`http://user:pw@${new URL(seller.url).host}/tools/sum`, bearer)).status).toBe(400);
    expect((await register('file:///etc/passwd', bearer)).status).toBe(400);
    await new Promise((r) => setTimeout(r, 200));
    expect(listener.connections()).toBe(0);
    expect(JSON.stringify(facilitator.resources())).toBe(before);
  } finally {
    await listener.close();
  }
});

/** A payment a buyer signs for `terms` changed to its own liking, and the body it would send the facilitator. */
async function tamperedPayment(buyer: LocalWallet, url: string, change: { payTo: string; amount: string }) {
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"a":1,"b":2}' });
  expect(res.status).toBe(402);
  const terms: PaymentRequired = decodePaymentRequiredHeader(res.headers.get('payment-required') as string);
  const requirements = { ...terms.accepts[0], ...change };
  const paymentPayload = await localBuyerClient(net, buyer, 1_000_000n).createPaymentPayload({ ...terms, accepts: [requirements] });
  return { x402Version: 2, paymentPayload, paymentRequirements: requirements };
}

const post = async (path: string, body: unknown) => {
  const res = await fetch(`${facilitator.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  return (await res.json()) as Record<string, unknown>;
};

test("a buyer's /verify and /settle naming the seller's tool with its own payee and price 1 change no listing", async () => {
  const buyer = await net.newWallet(1_000_000n);
  const thief = await net.newWallet();
  const before = JSON.stringify(facilitator.resources());
  const listedBefore = await discoverServices({ facilitatorUrl: facilitator.url });
  expect(listedBefore.services).toEqual([expect.objectContaining({ url: `${seller.url}/tools/sum`, price: '10000', payTo: payee.address })]);

  const verify = await tamperedPayment(buyer, `${seller.url}/tools/sum`, { payTo: thief.address, amount: '1' });
  // The facilitator finds the payment itself valid: only the listing is not the buyer's to write.
  expect(await post('/verify', verify)).toMatchObject({ isValid: true });
  const settle = await tamperedPayment(buyer, `${seller.url}/tools/sum`, { payTo: thief.address, amount: '1' });
  expect(await post('/settle', settle)).toMatchObject({ success: true });
  expect(await net.balanceOf(thief.address)).toBe(1n);

  expect(JSON.stringify(facilitator.resources())).toBe(before);
  expect((await discoverServices({ facilitatorUrl: facilitator.url })).services).toEqual(listedBefore.services);
});

test('a listing a payment made belongs to its payee: another payee cannot change it, the same one can', async () => {
  // A seller that does not register (another origin): listed from its first payment, as x402 facilitators catalogue.
  const quiet = await startSeller({
    facilitator: new HTTPFacilitatorClient({ url: facilitator.url }),
    network: net.network,
    offers: async () => [sumOffer(7_000n)],
    invoke: async () => ({ ok: true, output: 3 }),
    onSale: () => undefined,
  });
  try {
    const url = `${quiet.url}/tools/sum`;
    const buyer = await net.newWallet(1_000_000n);
    const thief = await net.newWallet();
    expect(await post('/verify', await tamperedPayment(buyer, url, { payTo: payee.address, amount: '7000' }))).toMatchObject({ isValid: true });
    const listed = () => facilitator.resources().find((r) => r.resource === url);
    expect(listed()?.accepts[0]).toMatchObject({ payTo: payee.address, amount: '7000' });
    const first = JSON.stringify(listed());

    expect(await post('/verify', await tamperedPayment(buyer, url, { payTo: thief.address, amount: '1' }))).toMatchObject({ isValid: true });
    expect(JSON.stringify(listed())).toBe(first);

    expect(await post('/verify', await tamperedPayment(buyer, url, { payTo: payee.address, amount: '6000' }))).toMatchObject({ isValid: true });
    expect(listed()?.accepts[0]).toMatchObject({ payTo: payee.address, amount: '6000' });
  } finally {
    await quiet.close();
  }
});
