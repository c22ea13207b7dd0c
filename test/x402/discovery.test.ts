import { randomBytes } from 'node:crypto';
import { HTTPFacilitatorClient } from '@x402/core/http';
import { wrapFetchWithPayment } from '@x402/fetch';
import { startLocalX402Network, type LocalWallet, type LocalX402Network } from '../../src/x402';
import { discoverServices } from '../../src/x402/discovery';
import { DiscoveryError } from '../../src/x402/errors';
import { startFacilitatorServer, type FacilitatorServer } from '../../src/x402/facilitator-server';
import { startSeller, type Offer, type SaleRecord, type Seller, type SellerInvokeResult } from '../../src/x402/seller';
import { localBuyerClient } from '../helpers/x402-buyer';

// Discovery through the facilitator's bazaar endpoints, on the real local network: the official facilitator behind
// the HTTP facilitator server, sellers reaching it with x402's HTTPFacilitatorClient, discoverServices reading it
// with @x402/extensions' withBazaar client.

const SUM_SCHEMA = {
  type: 'object',
  properties: { a: { type: 'number', description: 'first addend' }, b: { type: 'number', description: 'second addend' } },
  required: ['a', 'b'],
};
const FORECAST_SCHEMA = {
  type: 'object',
  properties: { city: { type: 'string', minLength: 2, description: 'where' }, days: { type: 'integer', minimum: 1 } },
  required: ['city', 'days'],
};

let net: LocalX402Network;
let facilitator: FacilitatorServer;
let payee: LocalWallet;
let seller: Seller;
let offers: Offer[];
const sales: SaleRecord[] = [];

async function invoke(tool: string, input: unknown): Promise<SellerInvokeResult> {
  const i = input as Record<string, number & string>;
  if (tool === 'sum') return { ok: true, output: i.a + i.b };
  if (tool === 'forecast') return { ok: true, output: { city: i.city, days: i.days, sky: 'clear' } };
  return { ok: false, status: 'not_found', error: tool };
}

function offer(tool: string, price: bigint, description: string, inputSchema: Record<string, unknown>): Offer {
  return {
    tool,
    price,
    asset: net.token.address,
    assetName: net.token.name,
    assetVersion: net.token.version,
    payTo: payee.address,
    description,
    inputSchema,
  };
}

// A seller that registers proves it with a token of its own, for its own origin (as the worker's seller does).
const startToolSeller = (o: { offers: () => Promise<Offer[]>; discoveryUrl?: string }) => {
  const token = randomBytes(24).toString('base64url');
  return startSeller({
    facilitator: new HTTPFacilitatorClient({ url: facilitator.url }),
    network: net.network,
    invoke,
    onSale: (record) => {
      sales.push(record);
    },
    ...(o.discoveryUrl ? { discoveryToken: token, onListening: (origin: string) => void facilitator.addRegistrant({ token, origin }) } : {}),
    ...o,
  });
};

beforeAll(async () => {
  net = await startLocalX402Network();
  payee = await net.newWallet();
  facilitator = await startFacilitatorServer({ facilitator: net.facilitator });
  offers = [offer('sum', 10_000n, 'Adds two numbers', SUM_SCHEMA), offer('forecast', 250_000n, 'Weather forecast for a city', FORECAST_SCHEMA)];
  seller = await startToolSeller({ offers: async () => offers, discoveryUrl: facilitator.url });
});

afterAll(async () => {
  await seller?.close();
  await facilitator?.close();
  await net?.stop();
});

test('the facilitator server is an x402 facilitator: /supported names exact on the local chain and the bazaar extension', async () => {
  const supported = await new HTTPFacilitatorClient({ url: facilitator.url }).getSupported();
  expect(supported.kinds).toEqual(expect.arrayContaining([expect.objectContaining({ scheme: 'exact', network: net.network })]));
  expect(supported.extensions).toContain('bazaar');
});

test('discovery lists each offered tool with its URL, price, terms and input schema before anyone has paid', async () => {
  const { services } = await discoverServices({ facilitatorUrl: facilitator.url });
  const byUrl = Object.fromEntries(services.map((s) => [s.url, s]));
  expect(Object.keys(byUrl).sort()).toEqual([`${seller.url}/tools/forecast`, `${seller.url}/tools/sum`]);
  expect(byUrl[`${seller.url}/tools/sum`]).toMatchObject({
    method: 'POST',
    description: 'Adds two numbers',
    price: '10000',
    asset: net.token.address,
    assetName: net.token.name,
    network: net.network,
    scheme: 'exact',
    payTo: payee.address,
    inputSchema: SUM_SCHEMA,
    inputExample: { a: 0, b: 0 },
  });
  // The example derived from the schema satisfies it (a facilitator lists nothing whose example does not).
  expect(byUrl[`${seller.url}/tools/forecast`]).toMatchObject({
    price: '250000',
    inputSchema: FORECAST_SCHEMA,
    inputExample: { city: 'xx', days: 1 },
  });
});

test('a query filters: words of the description or the input schema, all of them; filters by network and payee', async () => {
  const urls = async (o: Partial<Parameters<typeof discoverServices>[0]>) =>
    (await discoverServices({ facilitatorUrl: facilitator.url, ...o })).services.map((s) => s.url);
  expect(await urls({ query: 'weather' })).toEqual([`${seller.url}/tools/forecast`]);
  expect(await urls({ query: 'addend' })).toEqual([`${seller.url}/tools/sum`]);
  expect(await urls({ query: 'ADDS numbers' })).toEqual([`${seller.url}/tools/sum`]);
  expect(await urls({ query: 'adds weather' })).toEqual([]);
  expect(await urls({ network: 'eip155:8453' })).toEqual([]);
  expect((await urls({ payTo: payee.address.toLowerCase() })).sort()).toEqual([`${seller.url}/tools/forecast`, `${seller.url}/tools/sum`]);
  expect(await urls({ query: 'forecast', network: net.network })).toEqual([`${seller.url}/tools/forecast`]);
});

test('listings follow the offers: a new price, a removed tool, and close() withdraws the rest', async () => {
  offers = [offer('sum', 12_500n, 'Adds two numbers', SUM_SCHEMA)];
  await seller.refresh();
  let { services } = await discoverServices({ facilitatorUrl: facilitator.url });
  expect(services.map((s) => [s.url, s.price])).toEqual([[`${seller.url}/tools/sum`, '12500']]);

  const other = await startToolSeller({
    offers: async () => [offer('sum', 1_000n, 'Adds, cheaper', SUM_SCHEMA)],
    discoveryUrl: facilitator.url,
  });
  ({ services } = await discoverServices({ facilitatorUrl: facilitator.url }));
  expect(services.map((s) => s.url).sort()).toEqual([`${other.url}/tools/sum`, `${seller.url}/tools/sum`].sort());
  await other.close();
  ({ services } = await discoverServices({ facilitatorUrl: facilitator.url }));
  expect(services.map((s) => s.url)).toEqual([`${seller.url}/tools/sum`]);
});

test('a seller that does not register is listed from its first paid call, as x402 facilitators catalogue', async () => {
  const quiet = await startToolSeller({ offers: async () => [offer('forecast', 5_000n, 'Quiet forecast', FORECAST_SCHEMA)] });
  try {
    const listed = async () => (await discoverServices({ facilitatorUrl: facilitator.url, query: 'quiet' })).services;
    expect(await listed()).toEqual([]);

    const buyer = await net.newWallet(1_000_000n);
    const client = localBuyerClient(net, buyer, 5000n);
    const res = await wrapFetchWithPayment(fetch, client)(`${quiet.url}/tools/forecast`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ city: 'Lyon', days: 2 }),
    });
    // Verified and settled through the HTTP facilitator server.
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ output: { city: 'Lyon', days: 2, sky: 'clear' } });
    expect(await net.balanceOf(buyer.address)).toBe(995_000n);
    expect(sales.at(-1)).toMatchObject({ tool: 'forecast', status: 'settled', payer: buyer.address, amount: 5_000n });

    expect(await listed()).toEqual([expect.objectContaining({ url: `${quiet.url}/tools/forecast`, price: '5000', inputSchema: FORECAST_SCHEMA })]);
  } finally {
    await quiet.close();
  }
});

test('registration lists only what answers 402 with a bazaar declaration; discovery of an unreachable facilitator is an error', async () => {
  // A registrant serving the facilitator's own origin, to have it look at a route that answers 200.
  const token = randomBytes(24).toString('base64url');
  const withdraw = facilitator.addRegistrant({ token, origin: facilitator.url });
  const register = (resource: string) =>
    fetch(`${facilitator.url}/discovery/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
      body: JSON.stringify({ resource, method: 'GET' }),
    });
  const notPaid = await register(`${facilitator.url}/supported`);
  expect(notPaid.status).toBe(422);
  expect(((await notPaid.json()) as { error: string }).error).toMatch(/answered 200/);
  expect((await register('file:///etc/passwd')).status).toBe(400);
  expect(facilitator.resources().map((r) => r.resource)).not.toContain(`${facilitator.url}/supported`);
  withdraw();

  await expect(discoverServices({ facilitatorUrl: 'http://127.0.0.1:9', timeoutMs: 2_000 })).rejects.toThrow(DiscoveryError);
});
