import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import { serve } from '@hono/node-server';
import { Hono, type Context, type MiddlewareHandler } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import { decodePaymentRequiredHeader, decodePaymentSignatureHeader } from '@x402/core/http';
import {
  x402HTTPResourceServer,
  x402ResourceServer,
  type FacilitatorClient,
  type HTTPTransportContext,
  type RouteConfig,
  type SettleContext,
} from '@x402/core/server';
import type { Network, PaymentPayload } from '@x402/core/types';
import { ExactEvmScheme } from '@x402/evm/exact/server';
import { bazaarResourceServerExtension, declareDiscoveryExtension, validateDiscoveryExtension } from '@x402/extensions/bazaar';
import type { DiscoveryExtension } from '@x402/extensions/bazaar';
import { paymentMiddlewareFromHTTPServer } from '@x402/hono';
import { isToolName, toolNameMessage } from '../contract/tool-name';
import { Mutex } from '../registry/mutex';
import { MAX_AUTHORIZATION_SECONDS, TOOL_ROUTE_PREFIX } from '../contract/pay-runs';
import { SellerStartError } from './errors';

/** A tool offered for sale: what its paid route charges, to whom, and what it takes. */
export interface Offer {
  tool: string;
  /** Base units of `asset` (10^-decimals) a call costs; more than zero. */
  price: bigint;
  /** The EIP-3009 token the price is in. */
  asset: string;
  /** The token's EIP-712 domain name and version: the buyer signs with them, the facilitator checks them. */
  assetName: string;
  assetVersion: string;
  /** Who receives the payment. */
  payTo: string;
  description: string;
  /** The tool's input as a JSON Schema object, published with the bazaar discovery extension. */
  inputSchema: Record<string, unknown>;
  /**
   * An input that satisfies `inputSchema`, shown to buyers as the example body. Derived from the schema when absent;
   * a listing whose example does not validate against its schema is refused by facilitators, so the schema is then
   * published without its constraints (see `skipped`/`warnings` in {@link SellerRefresh}).
   */
  inputExample?: Record<string, unknown>;
}

/** What `invoke` answers: the registry's invoke result fits (its failures carry a `status` such as `invalid`). */
export type SellerInvokeResult = { ok: true; output: unknown } | { ok: false; error: string; status?: string };

/** A payment for a tool call, at one step of its settlement. */
export interface SaleRecord {
  /** The EIP-3009 authorization nonce of the payment: unique per payment, the ledger's key. */
  nonce: string;
  payer: string;
  tool: string;
  /** The paid route's URL. */
  resource: string;
  amount: bigint;
  asset: string;
  network: Network;
  /** `reserved`: about to be settled; then `settled`, or `failed` when the facilitator said it did not settle. */
  status: 'reserved' | 'settled' | 'failed';
  txHash?: string;
  reason?: string;
}

export interface SellerOptions {
  /** The facilitator that verifies and settles: the local network's in-process client or an `HTTPFacilitatorClient`. */
  facilitator: FacilitatorClient;
  /** The network every offer is paid on (CAIP-2, e.g. `eip155:31337`). */
  network: Network;
  /** The current offers; read at start and at every `refresh()`. */
  offers: () => Promise<Offer[]>;
  /** Calls a tool. Aborting `signal` (the buyer went away) should end the call. */
  invoke: (tool: string, input: unknown, options: { signal: AbortSignal }) => Promise<SellerInvokeResult>;
  /**
   * Called at each step of a payment that reaches settlement, before the buyer's response goes out: `reserved` right
   * before the facilitator is asked to settle, then `settled`, or `failed` when the facilitator answered that it did not
   * settle. When `reserved` throws, the payment is not settled (the buyer gets 402 and keeps the money): no money moves
   * without its record. A later step that throws leaves the record `reserved`, as does a settlement whose outcome is
   * unknown (the facilitator timed out or could not be reached): the chain decides it later (src/x402/reconcile.ts).
   * A tool call that fails is not charged and not reported: nothing was paid.
   */
  onSale: (record: SaleRecord) => Promise<void> | void;
  /**
   * Called when `onSale` throws after a settlement, a settlement's outcome is unknown, or the discovery catalogue cannot
   * be told of a change (the sale itself stands).
   */
  onError?: (error: unknown) => void;
  /** Default 127.0.0.1. */
  host?: string;
  /** Default 0: the kernel picks. */
  port?: number;
  /** The origin buyers reach this server at (behind a proxy); default `http://<host>:<port>`. */
  publicUrl?: string;
  /**
   * A facilitator URL whose catalogue is told when offers change (`POST /discovery/register`, served by
   * {@link startFacilitatorServer}), so a tool is listed before anyone has paid for it. Unset: the facilitator
   * catalogues a route only from the payments it verifies, as the x402 facilitators do.
   */
  discoveryUrl?: string;
  /**
   * The bearer token `discoveryUrl` knows this seller by: Forge's facilitator server registers resources only for a
   * seller that presents one, and only at the origin it serves (see {@link startFacilitatorServer}).
   */
  discoveryToken?: string;
  /**
   * Called with the server's origin once it listens, before the first listing is announced (a facilitator in the same
   * process learns there which origin this seller may register).
   */
  onListening?: (url: string) => void;
  /** The largest request body (the tool input) accepted, in bytes; default 1 MiB. */
  maxBodyBytes?: number;
  /**
   * How long a signed payment stays valid (the EIP-3009 validBefore window); default 300 s, as x402's. A payment
   * signed to stay valid longer than {@link MAX_AUTHORIZATION_SECONDS} is refused whatever this says: a sale a crash
   * left `reserved` is decided from the chain once its authorization cannot be used any more.
   */
  maxTimeoutSeconds?: number;
}

/** One paid route. */
interface SoldRoute {
  tool: string;
  url: string;
  price: bigint;
}

/** What a refresh put in place. */
export interface SellerRefresh {
  routes: SoldRoute[];
  /** Offers left out, and why (an invalid name, price or address). */
  skipped: { tool: string; reason: string }[];
  /** Offers sold, but with something to say (their schema could not be published as it is). */
  warnings: { tool: string; reason: string }[];
}

export interface Seller {
  /** The server's origin, e.g. `http://127.0.0.1:41234`; a tool is sold at `<url>/tools/<name>`. */
  url: string;
  port: number;
  /** Re-reads `offers()` and swaps the route table in one step; requests already paid finish on the old one. */
  refresh(): Promise<SellerRefresh>;
  /** Stops serving (and withdraws the listings when `discoveryUrl` is set). Idempotent. */
  close(): Promise<void>;
}

const DEFAULT_MAX_BODY_BYTES = 1024 * 1024;
const ADDRESS = /^0x[0-9a-fA-F]{40}$/;

interface RouteTable {
  offers: Map<string, Offer>;
  middleware: MiddlewareHandler;
}

type Env = { Variables: { table: RouteTable } };

/**
 * Starts an x402 resource server selling `offers()` as `POST /tools/<name>` (JSON body = the tool input), on Hono with
 * @x402/hono's payment middleware over an `x402ResourceServer` with the `exact` EVM scheme and the bazaar extension.
 * An unpaid call gets 402 with the terms; a paid one runs the tool and, only if the tool answered (status < 400), is
 * settled by the middleware after the handler, so a failed or refused call is never charged.
 * @throws SellerStartError when the facilitator cannot be reached or does not support `exact` on `network`.
 */
export async function startSeller(options: SellerOptions): Promise<Seller> {
  const onError = options.onError ?? ((error: unknown) => console.error('forge seller:', error));
  const resourceServer = new x402ResourceServer(options.facilitator)
    .register(options.network, new ExactEvmScheme())
    .registerExtension(bazaarResourceServerExtension);
  // Once, here: the middlewares built on refresh must not re-initialise it, which empties its tables while requests
  // are being priced.
  try {
    await resourceServer.initialize();
  } catch (err) {
    throw new SellerStartError(`The facilitator could not be reached: ${(err as Error).message}`, { cause: err });
  }
  if (!resourceServer.getSupportedKind(2, options.network, 'exact')) {
    throw new SellerStartError(`The facilitator does not settle exact payments on ${options.network}`);
  }

  let table: RouteTable = { offers: new Map(), middleware: (_c, next) => next() };
  const paymentLocks = new KeyedLock();
  const app = new Hono<Env>();
  app.use(`${TOOL_ROUTE_PREFIX}*`, bodyLimit({ maxSize: options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES }));
  app.use(`${TOOL_ROUTE_PREFIX}*`, async (c, next) => {
    const current = table;
    c.set('table', current);
    // One payment, one tool call: requests carrying the same signed payment go one at a time, so the second finds
    // the nonce used on the chain (402 from the facilitator's verify) instead of running the tool again and
    // failing at settlement.
    const key = paymentKey(c.req.header('payment-signature') ?? c.req.header('x-payment'));
    const returned = await (key === undefined ? current.middleware(c, next) : paymentLocks.run(key, () => current.middleware(c, next)));
    // The middleware either returns its 402 or leaves it in c.res (a refused settlement).
    if (returned instanceof Response) return termsInBody(returned);
    c.res = await termsInBody(c.res);
    return undefined;
  });
  app.post(`${TOOL_ROUTE_PREFIX}:name`, (c) => callTool(c, options.invoke));

  const server = await new Promise<Server>((resolve, reject) => {
    const s = serve({ fetch: app.fetch, hostname: options.host ?? '127.0.0.1', port: options.port ?? 0 }, () => resolve(s as Server));
    (s as Server).once('error', reject);
  });
  const port = (server.address() as AddressInfo).port;
  const url = (options.publicUrl ?? `http://${urlHost(options.host ?? '127.0.0.1')}:${port}`).replace(/\/+$/, '');
  const routeUrl = (tool: string) => `${url}${TOOL_ROUTE_PREFIX}${tool}`;
  options.onListening?.(url);

  const report = async (record: SaleRecord) => {
    try {
      await options.onSale(record);
    } catch (err) {
      onError(err);
    }
  };
  // Only EIP-3009 authorizations of bounded validity: their nonce is the ledger's key and what reconciliation asks
  // the chain about, and past their validity an unused one can never move money.
  // The buyer reads the reason (the 402's `error`), a code as x402's own are.
  resourceServer.onBeforeVerify(async (ctx) => {
    const refusal = authorizationProblem(ctx.paymentPayload as unknown as PaymentPayload);
    return refusal ? { abort: true, ...refusal } : undefined;
  });
  // x402 runs these hooks inside settlement, before the middleware answers: the record exists by the time the buyer
  // has the result. A path that never reaches settlement (a refused payment, a failed tool) is no sale.
  resourceServer.onBeforeSettle(async (ctx) => {
    try {
      await options.onSale(saleRecord(ctx, routeUrl, { status: 'reserved' }));
      return undefined;
    } catch (err) {
      // A hook that throws is only logged by x402, which then settles anyway: abort is how settlement is stopped.
      return { abort: true, reason: 'sale_not_recorded', message: `the sale could not be recorded, so it was not settled: ${(err as Error).message}` };
    }
  });
  resourceServer.onAfterSettle(async (ctx) => {
    await report(saleRecord(ctx, routeUrl, { status: 'settled', txHash: ctx.result.transaction, payer: ctx.result.payer }));
  });
  resourceServer.onSettleFailure(async (ctx) => {
    const failure = ctx.error as Error & { transaction?: string; payer?: string };
    // The facilitator's own answer (a SettleError) is a settlement that did not happen; a timeout or a lost connection
    // is one that may have: the record stays reserved for the chain to decide.
    // By name: each of @x402/core's entry points bundles its own SettleError class, so instanceof depends on which.
    if (failure.name !== 'SettleError') {
      onError(new Error(`a settlement's outcome is unknown (${failure.message}): its sale stays reserved until reconciled from the chain`, { cause: failure }));
      return;
    }
    await report(saleRecord(ctx, routeUrl, { status: 'failed', txHash: failure.transaction, payer: failure.payer, reason: failure.message }));
  });

  const swaps = new Mutex();
  let closed = false;
  const refresh = (): Promise<SellerRefresh> =>
    swaps.run(async () => {
      if (closed) return { routes: [], skipped: [], warnings: [] };
      const built = buildTable(await options.offers(), options, resourceServer, routeUrl);
      const before = [...table.offers.keys()];
      table = built.table;
      if (options.discoveryUrl) {
        const changed = new Set([...before, ...built.table.offers.keys()]);
        await announce(options.discoveryUrl, options.discoveryToken, [...changed].map(routeUrl), onError);
      }
      return built.result;
    });
  const close = async (): Promise<void> => {
    await swaps.run(async () => {
      if (closed) return;
      closed = true;
      const sold = [...table.offers.keys()];
      // Withdrawing the listings the catalogue's way: the routes stop answering 402 first, then the facilitator is
      // asked to look again and drops what is gone.
      table = { offers: new Map(), middleware: (_c, next) => next() };
      if (options.discoveryUrl && sold.length > 0) await announce(options.discoveryUrl, options.discoveryToken, sold.map(routeUrl), onError);
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeIdleConnections();
      });
    });
  };

  try {
    await refresh();
  } catch (err) {
    await close();
    throw err;
  }
  return { url, port, refresh, close };
}

/**
 * A 402 with its payment requirements in the JSON body as well as in the base64 PAYMENT-REQUIRED header. x402 v2 puts
 * them in the header only (@x402/hono answers `{}`), so a person with curl, or a client that reads bodies (as v1
 * clients did), saw nothing of the terms; the body is now the header's PaymentRequired, decoded, the same object. Any
 * other response, and a 402 without that header (a settlement refused: its reason is in PAYMENT-RESPONSE) or with a
 * body of its own (HTML for a browser), passes unchanged.
 */
async function termsInBody(res: Response): Promise<Response> {
  const header = res.headers.get('payment-required');
  if (res.status !== 402 || !header || !(res.headers.get('content-type') ?? '').includes('application/json')) return res;
  const body = await res.clone().text();
  if (body.trim() !== '{}' && body.trim() !== '') return res;
  let terms: unknown;
  try {
    terms = decodePaymentRequiredHeader(header);
  } catch {
    return res;
  }
  const headers = new Headers(res.headers);
  headers.delete('content-length');
  return new Response(JSON.stringify(terms), { status: res.status, statusText: res.statusText, headers });
}

/** The paid route's handler: runs after the payment is verified; its status decides whether it is settled. */
async function callTool(c: Context<Env>, invoke: SellerOptions['invoke']): Promise<Response> {
  const tool = c.req.param('name') ?? '';
  if (!c.get('table')?.offers.has(tool)) return c.json({ error: `no tool named ${JSON.stringify(tool)} is sold here` }, 404);
  let input: unknown;
  try {
    input = await c.req.json();
  } catch {
    return c.json({ error: 'the request body must be JSON: the tool input', status: 'invalid' }, 400);
  }
  let result: SellerInvokeResult;
  try {
    result = await invoke(tool, input, { signal: c.req.raw.signal });
  } catch (err) {
    result = { ok: false, status: 'crashed', error: `the tool could not be called: ${(err as Error).message}` };
  }
  if (result.ok) return c.json({ output: result.output ?? null });
  return c.json({ error: result.error, status: result.status ?? 'failed' }, failureStatus(result.status));
}

/**
 * The HTTP status of a failed call. Every one is >= 400, which is what makes the middleware cancel the payment
 * instead of settling it: the buyer pays for results only.
 */
function failureStatus(status: string | undefined): 400 | 404 | 500 | 503 | 504 {
  switch (status) {
    case 'invalid':
      return 400;
    case 'not_found':
      return 404;
    case 'timeout':
      return 504;
    case 'closed':
    case 'unavailable':
      return 503;
    default:
      return 500;
  }
}

function buildTable(
  offers: Offer[],
  options: SellerOptions,
  resourceServer: x402ResourceServer,
  routeUrl: (tool: string) => string,
): { table: RouteTable; result: SellerRefresh } {
  const routes: Record<string, RouteConfig> = {};
  const byTool = new Map<string, Offer>();
  const result: SellerRefresh = { routes: [], skipped: [], warnings: [] };
  for (const offer of offers) {
    const problem = offerProblem(offer, byTool);
    if (problem) {
      result.skipped.push({ tool: String(offer.tool), reason: problem });
      continue;
    }
    const discovery = discoveryExtension(offer);
    if (discovery.warning) result.warnings.push({ tool: offer.tool, reason: discovery.warning });
    byTool.set(offer.tool, offer);
    routes[`POST ${TOOL_ROUTE_PREFIX}${offer.tool}`] = {
      accepts: {
        scheme: 'exact',
        network: options.network,
        payTo: offer.payTo,
        price: { amount: offer.price.toString(), asset: offer.asset, extra: { name: offer.assetName, version: offer.assetVersion } },
        ...(options.maxTimeoutSeconds ? { maxTimeoutSeconds: options.maxTimeoutSeconds } : {}),
      },
      // Fixed, rather than the URL each request names: the resource a buyer pays for and a catalogue lists is one.
      resource: routeUrl(offer.tool),
      description: offer.description,
      mimeType: 'application/json',
      extensions: discovery.extensions,
    };
    result.routes.push({ tool: offer.tool, url: routeUrl(offer.tool), price: offer.price });
  }
  const httpServer = new x402HTTPResourceServer(resourceServer, routes);
  // The resource server was initialised at start; this middleware must not do it again (see startSeller).
  const middleware = paymentMiddlewareFromHTTPServer(httpServer, undefined, undefined, false);
  return { table: { offers: byTool, middleware }, result };
}

function offerProblem(offer: Offer, seen: Map<string, Offer>): string | undefined {
  if (!isToolName(offer.tool)) return toolNameMessage(offer.tool);
  if (seen.has(offer.tool)) return 'offered twice: the first offer is sold';
  if (typeof offer.price !== 'bigint' || offer.price <= 0n) return 'the price must be a positive number of base units';
  if (!ADDRESS.test(offer.asset)) return `the asset ${JSON.stringify(offer.asset)} is not an address`;
  if (!ADDRESS.test(offer.payTo)) return `the payee ${JSON.stringify(offer.payTo)} is not an address`;
  if (!offer.assetName || !offer.assetVersion) return "the asset's EIP-712 name and version are required";
  return undefined;
}

/**
 * The bazaar declaration of a tool's route: POST with a JSON body described by the tool's input schema, and an example
 * body. Facilitators validate the example against the schema before listing a route, so the declaration is checked
 * here the same way (with the method the middleware adds per request).
 */
function discoveryExtension(offer: Offer): { extensions: Record<string, unknown>; warning?: string } {
  const inputSchema = objectSchema(offer.inputSchema);
  const input = offer.inputExample ?? (exampleOf(inputSchema) as Record<string, unknown>);
  const declared = declareDiscoveryExtension({ bodyType: 'json', input, inputSchema });
  if (listable(declared.bazaar)) return { extensions: declared };
  const loose = declareDiscoveryExtension({ bodyType: 'json', input: {}, inputSchema: { type: 'object' } });
  return {
    extensions: loose,
    warning: 'its input schema has no example input that satisfies it: listed without the schema (pass inputExample)',
  };
}

function listable(extension: DiscoveryExtension): boolean {
  const withMethod = { ...extension, info: { ...extension.info, input: { ...extension.info.input, method: 'POST' } } };
  return validateDiscoveryExtension(withMethod as DiscoveryExtension).valid;
}

/** The schema as a body schema: an object schema, without a nested `$schema` (it describes the whole listing). */
function objectSchema(schema: Record<string, unknown>): Record<string, unknown> {
  const { $schema: _ignored, ...rest } = schema ?? {};
  return rest.type === undefined && rest.properties !== undefined ? { type: 'object', ...rest } : rest;
}

/**
 * A small value satisfying common JSON Schemas (the ones zod emits for tool inputs): a schema's own example or
 * default, else its const or first enum value, else the least value of its type with every required property.
 */
function exampleOf(schema: unknown, depth = 0): unknown {
  if (!schema || typeof schema !== 'object' || depth > 8) return {};
  const s = schema as Record<string, unknown>;
  if (Array.isArray(s.examples) && s.examples.length > 0) return s.examples[0];
  if ('default' in s) return s.default;
  if ('const' in s) return s.const;
  if (Array.isArray(s.enum) && s.enum.length > 0) return s.enum[0];
  for (const key of ['anyOf', 'oneOf', 'allOf'] as const) {
    if (Array.isArray(s[key]) && s[key].length > 0) return exampleOf(s[key][0], depth + 1);
  }
  const type = Array.isArray(s.type) ? s.type[0] : s.type;
  switch (type) {
    case 'string':
      return 'x'.repeat(typeof s.minLength === 'number' ? s.minLength : 0);
    case 'number':
    case 'integer':
      return typeof s.minimum === 'number' ? s.minimum : typeof s.exclusiveMinimum === 'number' ? s.exclusiveMinimum + 1 : 0;
    case 'boolean':
      return false;
    case 'null':
      return null;
    case 'array':
      return Array.from({ length: typeof s.minItems === 'number' ? s.minItems : 0 }, () => exampleOf(s.items, depth + 1));
    default: {
      const properties = (s.properties ?? {}) as Record<string, unknown>;
      const required = Array.isArray(s.required) ? (s.required as string[]) : [];
      return Object.fromEntries(required.map((name) => [name, exampleOf(properties[name], depth + 1)]));
    }
  }
}

function saleRecord(
  ctx: SettleContext,
  routeUrl: (tool: string) => string,
  outcome: { status: SaleRecord['status']; txHash?: string; payer?: string; reason?: string },
): SaleRecord {
  const payload = ctx.paymentPayload as unknown as PaymentPayload;
  const authorization = (payload.payload as { authorization?: { nonce?: unknown; from?: unknown } }).authorization;
  // The path this server matched, not the URL the buyer's payload names.
  const path = (ctx.transportContext as HTTPTransportContext | undefined)?.request?.path ?? '';
  const tool = path.startsWith(TOOL_ROUTE_PREFIX) ? path.slice(TOOL_ROUTE_PREFIX.length) : path;
  return {
    // An EIP-3009 authorization's: verification refused any payment without one (authorizationProblem).
    nonce: String(authorization?.nonce),
    payer: outcome.payer || (typeof authorization?.from === 'string' ? authorization.from : ''),
    tool,
    resource: routeUrl(tool),
    amount: BigInt(ctx.requirements.amount),
    asset: ctx.requirements.asset,
    network: ctx.requirements.network,
    status: outcome.status,
    ...(outcome.txHash ? { txHash: outcome.txHash } : {}),
    ...(outcome.reason ? { reason: outcome.reason } : {}),
  };
}

/** Why a payment is not one this seller takes, or undefined: it must be an EIP-3009 authorization of bounded validity. */
function authorizationProblem(payload: PaymentPayload, nowSeconds = Math.floor(Date.now() / 1000)): { reason: string; message: string } | undefined {
  const authorization = (payload.payload as { authorization?: { nonce?: unknown; validBefore?: unknown } }).authorization;
  if (typeof authorization?.nonce !== 'string' || !/^0x[0-9a-fA-F]{64}$/.test(authorization.nonce)) {
    return { reason: 'unsupported_payload', message: 'only EIP-3009 transferWithAuthorization payments are accepted here' };
  }
  const validBefore = Number(authorization.validBefore);
  if (!Number.isFinite(validBefore) || validBefore > nowSeconds + MAX_AUTHORIZATION_SECONDS) {
    return {
      reason: 'authorization_validity_too_long',
      message: `the authorization must expire within ${MAX_AUTHORIZATION_SECONDS} s; sign it again with the validity this 402 asks for`,
    };
  }
  return undefined;
}

/** What identifies a payment among concurrent requests: its nonce when it has one, else the header itself. */
function paymentKey(header: string | undefined): string | undefined {
  if (!header) return undefined;
  try {
    const payload = decodePaymentSignatureHeader(header);
    const nonce = (payload.payload as { authorization?: { nonce?: unknown } }).authorization?.nonce;
    return typeof nonce === 'string' ? nonce.toLowerCase() : header;
  } catch {
    return header; // malformed: the middleware answers it
  }
}

/** Per-key mutual exclusion that forgets a key once nobody waits on it. */
class KeyedLock {
  private readonly locks = new Map<string, { mutex: Mutex; users: number }>();

  async run<T>(key: string, task: () => Promise<T>): Promise<T> {
    let entry = this.locks.get(key);
    if (!entry) this.locks.set(key, (entry = { mutex: new Mutex(), users: 0 }));
    entry.users += 1;
    try {
      return await entry.mutex.run(task);
    } finally {
      entry.users -= 1;
      if (entry.users === 0) this.locks.delete(key);
    }
  }
}

/** Asks the discovery catalogue to look at these routes again (it lists what answers 402, drops what is gone). */
async function announce(discoveryUrl: string, token: string | undefined, resources: string[], onError: (error: unknown) => void): Promise<void> {
  const endpoint = `${discoveryUrl.replace(/\/+$/, '')}/discovery/register`;
  await Promise.all(
    resources.map(async (resource) => {
      try {
        const res = await fetch(endpoint, {
          method: 'POST',
          headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
          body: JSON.stringify({ resource, method: 'POST' }),
          signal: AbortSignal.timeout(10_000),
        });
        if (!res.ok) throw new Error(`the catalogue at ${endpoint} answered ${res.status} for ${resource}: ${await res.text()}`);
      } catch (err) {
        onError(err);
      }
    }),
  );
}

function urlHost(host: string): string {
  return host.includes(':') ? `[${host}]` : host;
}
