import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import { serve } from '@hono/node-server';
import { Hono, type Context } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import type { x402Facilitator } from '@x402/core/facilitator';
import { decodePaymentRequiredHeader } from '@x402/core/http';
import { isPaymentPayload, isPaymentRequirements } from '@x402/core/schemas';
import type { PaymentPayload, PaymentRequired, PaymentRequirements } from '@x402/core/types';
import { BAZAAR, extractDiscoveryInfo } from '@x402/extensions/bazaar';
import type { DiscoveryResource } from '@x402/extensions/bazaar';
import { isPrivateHost } from '../contract/never-reachable';
import { presentsToken, tokenDigest } from '../process/read-api-token';

/**
 * A seller allowed to ask for its own resources to be listed (`POST /discovery/register`): it proves who it is with a
 * bearer token, and the facilitator fetches only URLs at the origin it serves.
 */
interface Registrant {
  /** The secret it sends as `Authorization: Bearer <token>`. */
  token: string;
  /** The origin its resources are served at (`http://127.0.0.1:41234`): the only one registration fetches for it. */
  origin: string;
}

export interface FacilitatorServerOptions {
  /** The facilitator answering /verify, /settle and /supported (the local network's, or any `x402Facilitator`). */
  facilitator: x402Facilitator;
  /** Default 127.0.0.1. */
  host?: string;
  /** Default 0: the kernel picks. */
  port?: number;
  /**
   * Whether `POST /discovery/register` is served: the facilitator then fetches the named resource itself and lists
   * what its 402 declares, for a {@link Registrant} only. Default true; turn it off where the facilitator must not
   * make requests on anyone's behalf.
   */
  registration?: boolean;
  /** Who may register, from the start; more with {@link FacilitatorServer.addRegistrant}. None: every request is 401. */
  registrants?: Registrant[];
  /** How long a registration's look at the resource may take; default 5 s. */
  probeTimeoutMs?: number;
  /** The most resources the catalogue holds (the oldest listing goes first); default 10,000. */
  maxResources?: number;
}

export interface FacilitatorServer {
  /** The facilitator's URL, what `new HTTPFacilitatorClient({ url })` takes. */
  url: string;
  port: number;
  /** Every listed resource, as `GET /discovery/resources` has them. */
  resources(): DiscoveryResource[];
  /**
   * Lets a seller register its own resources from now on (see {@link Registrant}); returns what takes that back.
   * @throws Error when the origin is not an http(s) origin or the token is shorter than 16 characters.
   */
  addRegistrant(registrant: Registrant): () => void;
  /** Idempotent. */
  close(): Promise<void>;
}

const MAX_REQUEST_BYTES = 256 * 1024;
const MAX_PAGE = 100;
const BODY_METHODS = new Set(['POST', 'PUT', 'PATCH']);
const METHODS = new Set([...BODY_METHODS, 'GET', 'HEAD', 'DELETE']);

/**
 * Serves an `x402Facilitator` over HTTP the way x402's facilitators do, so an `HTTPFacilitatorClient` pointed at it
 * verifies and settles for a resource server: `POST /verify`, `POST /settle`, `GET /supported` (which names the
 * bazaar extension), and bazaar discovery, `GET /discovery/resources` and `GET /discovery/search`, which
 * `withBazaar(client)` reads.
 *
 * The catalogue fills two ways, and an entry changes only by its owner:
 * - Registration (`POST /discovery/register {resource, method}`), for a resource nobody has paid for yet: only a
 *   {@link Registrant} may ask (its bearer token; without one the answer is 401 before anything is read or fetched),
 *   and only for a URL at the origin it serves. Anything else is refused before a connection is made, so the endpoint
 *   tells nobody what listens where: a loopback, private, link-local or metadata address however it is written
 *   (`2130706433`, `0x7f000001`, `[::ffff:127.0.0.1]`, `localhost`, `0.0.0.0`, `[::1]`) is refused unless it is that
 *   registrant's own configured origin. The facilitator then sends the resource an unpaid request (no redirect
 *   followed) and lists what its 402 declares, under the URL it fetched, owned by the registrant; a 404 or 410 takes
 *   the listing down.
 * - Payments, as x402's facilitators catalogue (a verified or settled payload echoes the resource's bazaar
 *   declaration): only for an origin no registrant serves, and never over an entry of another owner. Such an entry
 *   belongs to the payee it names; a payment naming another payee (a buyer's own /verify with other terms) changes
 *   nothing. What a registrant lists is never changed by a payment.
 */
export async function startFacilitatorServer(options: FacilitatorServerOptions): Promise<FacilitatorServer> {
  const { facilitator } = options;
  const catalogue = new Catalogue(options.maxResources ?? 10_000);
  const registrants = new Registrants();
  for (const r of options.registrants ?? []) registrants.add(r);
  catalogue.isRegisteredOrigin = (origin) => registrants.servesOrigin(origin);
  const app = new Hono();
  app.use('*', bodyLimit({ maxSize: MAX_REQUEST_BYTES }));

  app.get('/supported', (c) => {
    const supported = facilitator.getSupported();
    const extensions = [...new Set([...supported.extensions, BAZAAR.key])];
    return c.json({ ...supported, extensions });
  });

  app.post('/verify', async (c) => {
    const request = await paymentRequest(c);
    if ('error' in request) return c.json({ error: request.error }, 400);
    try {
      const result = await facilitator.verify(request.paymentPayload, request.paymentRequirements);
      if (result.isValid) catalogue.fromPayment(request.paymentPayload, request.paymentRequirements);
      return c.json(result);
    } catch (err) {
      return failure(c, err);
    }
  });

  app.post('/settle', async (c) => {
    const request = await paymentRequest(c);
    if ('error' in request) return c.json({ error: request.error }, 400);
    try {
      const result = await facilitator.settle(request.paymentPayload, request.paymentRequirements);
      if (result.success) catalogue.fromPayment(request.paymentPayload, request.paymentRequirements);
      return c.json(result);
    } catch (err) {
      const message = (err as Error).message ?? String(err);
      // A hook's refusal is an answer (as x402's facilitators give it), not a server error.
      if (message.startsWith('Settlement aborted: ')) {
        return c.json({
          success: false,
          errorReason: message.slice('Settlement aborted: '.length),
          transaction: '',
          network: request.paymentRequirements.network,
        });
      }
      return failure(c, err);
    }
  });

  app.get('/discovery/resources', (c) => {
    const limit = pageSize(c.req.query('limit'));
    const offset = Math.max(0, Number.parseInt(c.req.query('offset') ?? '0', 10) || 0);
    const matching = catalogue.list(filtersOf(c));
    return c.json({
      x402Version: 2,
      items: matching.slice(offset, offset + limit),
      pagination: { limit, offset, total: matching.length },
    });
  });

  app.get('/discovery/search', (c) => {
    const query = c.req.query('query') ?? '';
    const limit = pageSize(c.req.query('limit'));
    // The cursor is the offset of the next page, opaque to clients.
    const offset = Math.max(0, Number.parseInt(c.req.query('cursor') ?? '0', 10) || 0);
    const matching = catalogue.search(query, filtersOf(c));
    const next = offset + limit < matching.length ? String(offset + limit) : null;
    return c.json({
      x402Version: 2,
      resources: matching.slice(offset, offset + limit),
      partialResults: false,
      pagination: { limit, cursor: next },
    });
  });

  if (options.registration ?? true) {
    app.post('/discovery/register', async (c) => {
      // Who asks, first: an unauthenticated caller learns nothing, and nothing is fetched for it.
      const registrant = registrants.presenting(c.req.header('authorization'));
      if (!registrant) {
        return c.json({ error: 'registration is for the registering seller only: send its bearer token (Authorization: Bearer ...)' }, 401, {
          'www-authenticate': 'Bearer',
        });
      }
      let body: { resource?: unknown; method?: unknown };
      try {
        body = await c.req.json();
      } catch {
        return c.json({ error: 'the body must be JSON: {resource, method}' }, 400);
      }
      const method = typeof body.method === 'string' ? body.method.toUpperCase() : 'GET';
      const url = typeof body.resource === 'string' ? parseHttpUrl(body.resource) : undefined;
      if (!url || !METHODS.has(method)) {
        return c.json({ error: 'resource must be an http(s) URL without credentials and method an HTTP method' }, 400);
      }
      const refusal = registrationRefusal(url, registrant);
      if (refusal) return c.json({ error: refusal }, 403);
      const resource = url.href;
      const outcome = await probe(resource, method, options.probeTimeoutMs ?? 5_000);
      if (outcome.kind === 'gone') {
        catalogue.remove(resource, registrant.origin);
        return c.json({ resource, listed: false, reason: `the resource answered ${outcome.status}` });
      }
      if (outcome.kind === 'error') return c.json({ error: outcome.error }, outcome.status);
      const listed = catalogue.fromPaymentRequired(resource, outcome.required, registrant.origin);
      if (!listed) {
        catalogue.remove(resource, registrant.origin);
        return c.json({ error: 'the 402 the resource answered declares no valid bazaar discovery extension' }, 422);
      }
      return c.json({ resource: listed.resource, listed: true });
    });
  }

  const server = await new Promise<Server>((resolve, reject) => {
    const s = serve({ fetch: app.fetch, hostname: options.host ?? '127.0.0.1', port: options.port ?? 0 }, () => resolve(s as Server));
    (s as Server).once('error', reject);
  });
  const port = (server.address() as AddressInfo).port;
  const host = options.host ?? '127.0.0.1';
  let closing: Promise<void> | undefined;
  return {
    url: `http://${host.includes(':') ? `[${host}]` : host}:${port}`,
    port,
    resources: () => catalogue.list({}),
    addRegistrant: (registrant) => registrants.add(registrant),
    close: () =>
      (closing ??= new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeIdleConnections();
      })),
  };
}

type PaymentRequest = { paymentPayload: PaymentPayload; paymentRequirements: PaymentRequirements } | { error: string };

/** The body of /verify and /settle, checked with x402's own schemas (zod 3 stays inside @x402/core). */
async function paymentRequest(c: Context): Promise<PaymentRequest> {
  let body: { paymentPayload?: unknown; paymentRequirements?: unknown };
  try {
    body = await c.req.json();
  } catch {
    return { error: 'the body must be JSON: {x402Version, paymentPayload, paymentRequirements}' };
  }
  if (!isPaymentPayload(body?.paymentPayload)) return { error: 'paymentPayload is missing or malformed' };
  if (!isPaymentRequirements(body.paymentRequirements)) return { error: 'paymentRequirements is missing or malformed' };
  return {
    paymentPayload: body.paymentPayload as PaymentPayload,
    paymentRequirements: body.paymentRequirements as PaymentRequirements,
  };
}

/** An exception from the facilitator (no scheme for the network, the chain unreachable): a server error. */
function failure(c: Context, err: unknown): Response {
  return c.json({ error: err instanceof Error ? err.message : String(err) }, 500);
}

function pageSize(raw: string | undefined): number {
  const n = Number.parseInt(raw ?? '', 10);
  return Number.isFinite(n) && n > 0 ? Math.min(n, MAX_PAGE) : MAX_PAGE;
}

interface Filters {
  type?: string;
  payTo?: string;
  scheme?: string;
  network?: string;
  extensions?: string;
}

function filtersOf(c: Context): Filters {
  const pick = (name: keyof Filters) => c.req.query(name) || undefined;
  return { type: pick('type'), payTo: pick('payTo'), scheme: pick('scheme'), network: pick('network'), extensions: pick('extensions') };
}

/** An http(s) URL as WHATWG parses it (hosts normalised: `2130706433` is `127.0.0.1`), without user or password. */
function parseHttpUrl(text: string): URL | undefined {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return undefined;
  }
  if ((url.protocol !== 'http:' && url.protocol !== 'https:') || url.username || url.password) return undefined;
  return url;
}

/** Why `url` is not one `registrant` may have fetched, or undefined: only URLs at its own origin are. */
function registrationRefusal(url: URL, registrant: { origin: string }): string | undefined {
  if (url.origin === registrant.origin) return undefined;
  if (isPrivateHost(url.hostname)) {
    return `${url.hostname} is a loopback, private, link-local or metadata address, and not the origin you serve (${registrant.origin}): nothing was fetched`;
  }
  return `${url.origin} is not the origin you serve (${registrant.origin}): a seller registers only its own resources; nothing was fetched`;
}

/** The registrants, found by the token they present (compared in constant time, as the read API's). */
class Registrants {
  private readonly entries = new Set<{ digest: Buffer; origin: string }>();

  add(registrant: Registrant): () => void {
    let origin: string;
    try {
      const url = new URL(registrant.origin);
      if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new Error(url.protocol);
      origin = url.origin;
    } catch {
      throw new Error(`a registrant's origin must be an http(s) origin, not ${JSON.stringify(registrant.origin)}`);
    }
    if (typeof registrant.token !== 'string' || registrant.token.length < 16) throw new Error("a registrant's token must have at least 16 characters");
    const entry = { digest: tokenDigest(registrant.token), origin };
    this.entries.add(entry);
    return () => void this.entries.delete(entry);
  }

  /** The origin of the registrant whose token `authorization` carries, or undefined. */
  presenting(authorization: string | undefined): { origin: string } | undefined {
    // Every entry is compared, so how long the answer takes says nothing of which one matched.
    let found: { origin: string } | undefined;
    for (const entry of this.entries) if (presentsToken(authorization, entry.digest)) found ??= { origin: entry.origin };
    return found;
  }

  servesOrigin(origin: string): boolean {
    for (const entry of this.entries) if (entry.origin === origin) return true;
    return false;
  }
}

type ProbeOutcome = { kind: 'required'; required: PaymentRequired } | { kind: 'gone'; status: number } | { kind: 'error'; status: 422 | 502; error: string };

/** An unpaid request to the resource, as a buyer's first one: what its 402 says. */
async function probe(resource: string, method: string, timeoutMs: number): Promise<ProbeOutcome> {
  let res: Response;
  try {
    res = await fetch(resource, {
      method,
      headers: { accept: 'application/json', ...(BODY_METHODS.has(method) ? { 'content-type': 'application/json' } : {}) },
      ...(BODY_METHODS.has(method) ? { body: '{}' } : {}),
      redirect: 'manual',
      signal: AbortSignal.timeout(timeoutMs),
    });
  } catch (err) {
    return { kind: 'error', status: 502, error: `the resource could not be reached: ${(err as Error).message}` };
  }
  await res.body?.cancel();
  if (res.status === 404 || res.status === 410) return { kind: 'gone', status: res.status };
  const header = res.headers.get('payment-required');
  if (res.status !== 402 || !header) {
    return { kind: 'error', status: 422, error: `the resource answered ${res.status} without payment terms, not 402` };
  }
  try {
    return { kind: 'required', required: decodePaymentRequiredHeader(header) };
  } catch (err) {
    return { kind: 'error', status: 422, error: `the resource's PAYMENT-REQUIRED header is malformed: ${(err as Error).message}` };
  }
}

/**
 * Who may change a listing: `registrant:<origin>` for what a registrant listed, `payee:<address>` for what a payment
 * listed (the payee it names).
 */
type Owner = string;

/** The bazaar catalogue: one listing per canonical resource URL, newest last, each with its owner. */
class Catalogue {
  private readonly entries = new Map<string, { owner: Owner; resource: DiscoveryResource }>();
  /** Whether a registrant serves this origin: its resources are listed by registration only. */
  isRegisteredOrigin: (origin: string) => boolean = () => false;

  constructor(private readonly max: number) {}

  /**
   * Lists what a verified or settled payment describes (its payload echoes the resource's bazaar declaration), unless
   * a registrant serves its origin or another owner listed it: a payment names its resource and terms itself, so a
   * buyer could otherwise list anyone's URL at any price to any payee.
   */
  fromPayment(payload: PaymentPayload, requirements: PaymentRequirements): DiscoveryResource | undefined {
    return this.add(payload, [requirements], `payee:${requirements.payTo.toLowerCase()}`, (origin) => !this.isRegisteredOrigin(origin));
  }

  /** Lists what a resource's 402 declares, under the URL it was fetched at, for the registrant serving `origin`. */
  fromPaymentRequired(url: string, required: PaymentRequired, origin: string): DiscoveryResource | undefined {
    if (required.accepts.length === 0) return undefined;
    const payload: PaymentPayload = {
      x402Version: required.x402Version,
      resource: { ...required.resource, url },
      accepted: required.accepts[0],
      payload: {},
      ...(required.extensions ? { extensions: required.extensions } : {}),
    };
    // The registrant's own origin: its listing replaces whatever a payment listed there before it registered.
    return this.add(payload, required.accepts, `registrant:${origin}`, (at) => at === origin, true);
  }

  /** Takes a listing down, for the registrant serving `origin` (a registrant's own resources only). */
  remove(url: string, origin: string): void {
    try {
      const u = new URL(url);
      if (u.origin !== origin) return;
      this.entries.delete(`${u.origin}${u.pathname}`);
    } catch {
      // not a URL: nothing listed under it
    }
  }

  list(filters: Filters): DiscoveryResource[] {
    return [...this.entries.values()].map((e) => e.resource).filter((r) => matches(r, filters));
  }

  /** Every query word (case-insensitive) must appear in what a listing says: its URL, description, tags or schema. */
  search(query: string, filters: Filters): DiscoveryResource[] {
    const words = query
      .toLowerCase()
      .split(/[^\p{L}\p{N}_]+/u)
      .filter(Boolean);
    return this.list(filters).filter((r) => {
      const text = searchableText(r);
      return words.every((w) => text.includes(w));
    });
  }

  /**
   * Lists the resource for `owner` when `mayList` allows its origin and no other owner holds its listing (unless
   * `replaces`: a registrant takes over its own URL).
   */
  private add(
    payload: PaymentPayload,
    accepts: PaymentRequirements[],
    owner: Owner,
    mayList: (origin: string) => boolean,
    replaces = false,
  ): DiscoveryResource | undefined {
    let discovered: ReturnType<typeof extractDiscoveryInfo>;
    try {
      discovered = extractDiscoveryInfo(payload, accepts[0], true);
    } catch {
      return undefined; // no URL or no valid declaration: nothing to list
    }
    if (!discovered) return undefined;
    const origin = originOf(discovered.resourceUrl);
    if (origin === undefined || !mayList(origin)) return undefined;
    const existing = this.entries.get(discovered.resourceUrl);
    if (existing && existing.owner !== owner && !replaces) return undefined;
    const entry: DiscoveryResource = {
      resource: discovered.resourceUrl,
      type: discovered.discoveryInfo.input.type,
      x402Version: discovered.x402Version,
      accepts,
      lastUpdated: new Date().toISOString(),
      ...(discovered.description ? { description: discovered.description } : {}),
      ...(discovered.mimeType ? { mimeType: discovered.mimeType } : {}),
      ...(discovered.serviceName ? { serviceName: discovered.serviceName } : {}),
      ...(discovered.tags ? { tags: discovered.tags } : {}),
      ...(discovered.iconUrl ? { iconUrl: discovered.iconUrl } : {}),
      ...(discovered.extensions ? { extensions: discovered.extensions } : {}),
    };
    this.entries.delete(entry.resource); // re-inserted last: the newest listing is the last to be evicted
    this.entries.set(entry.resource, { owner, resource: entry });
    while (this.entries.size > this.max) this.entries.delete(this.entries.keys().next().value as string);
    return entry;
  }
}

function originOf(url: unknown): string | undefined {
  if (typeof url !== 'string') return undefined;
  try {
    return new URL(url).origin;
  } catch {
    return undefined;
  }
}

function matches(r: DiscoveryResource, f: Filters): boolean {
  if (f.type && r.type !== f.type) return false;
  if (f.extensions && !(r.extensions && f.extensions in r.extensions)) return false;
  return r.accepts.some(
    (a) => (!f.payTo || a.payTo.toLowerCase() === f.payTo.toLowerCase()) && (!f.scheme || a.scheme === f.scheme) && (!f.network || a.network === f.network),
  );
}

/** What a search looks in: the listing's words, and its bazaar declaration (the example input, the input schema). */
function searchableText(r: DiscoveryResource): string {
  const bazaar = r.extensions?.[BAZAAR.key] as { info?: unknown; schema?: { properties?: { input?: { properties?: { body?: unknown } } } } } | undefined;
  const inputSchema = bazaar?.schema?.properties?.input?.properties?.body ?? {};
  return [r.resource, r.description ?? '', r.serviceName ?? '', ...(r.tags ?? []), JSON.stringify([bazaar?.info ?? {}, inputSchema])].join('\n').toLowerCase();
}
