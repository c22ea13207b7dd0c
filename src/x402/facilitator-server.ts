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

export interface FacilitatorServerOptions {
  /** The facilitator answering /verify, /settle and /supported (the local network's, or any `x402Facilitator`). */
  facilitator: x402Facilitator;
  /** Default 127.0.0.1. */
  host?: string;
  /** Default 0: the kernel picks. */
  port?: number;
  /**
   * Whether `POST /discovery/register` is served: the facilitator then fetches the named resource itself and lists
   * what its 402 declares. Default true; turn it off where the facilitator must not make requests on anyone's behalf.
   */
  registration?: boolean;
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
 * The catalogue fills as in x402's facilitator examples: a payment it verifies or settles lists the resource its
 * payload describes (`extractDiscoveryInfo`, with the package's validation). A resource nobody has paid for yet is
 * listed through `POST /discovery/register {resource, method}`: the facilitator sends the resource an unpaid request
 * and lists what the 402 it gets declares, under the URL it fetched; a 404 or 410 takes the listing down. So a
 * listing only ever says what the resource itself says, and a seller cannot list terms for someone else's URL.
 */
export async function startFacilitatorServer(options: FacilitatorServerOptions): Promise<FacilitatorServer> {
  const { facilitator } = options;
  const catalogue = new Catalogue(options.maxResources ?? 10_000);
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
      let body: { resource?: unknown; method?: unknown };
      try {
        body = await c.req.json();
      } catch {
        return c.json({ error: 'the body must be JSON: {resource, method}' }, 400);
      }
      const method = typeof body.method === 'string' ? body.method.toUpperCase() : 'GET';
      if (typeof body.resource !== 'string' || !/^https?:\/\//.test(body.resource) || !METHODS.has(method)) {
        return c.json({ error: 'resource must be an http(s) URL and method an HTTP method' }, 400);
      }
      const outcome = await probe(body.resource, method, options.probeTimeoutMs ?? 5_000);
      if (outcome.kind === 'gone') {
        catalogue.remove(body.resource);
        return c.json({ resource: body.resource, listed: false, reason: `the resource answered ${outcome.status}` });
      }
      if (outcome.kind === 'error') return c.json({ error: outcome.error }, outcome.status);
      const listed = catalogue.fromPaymentRequired(body.resource, outcome.required);
      if (!listed) {
        catalogue.remove(body.resource);
        return c.json({ error: 'the 402 the resource answered declares no valid bazaar discovery extension' }, 422);
      }
      return c.json({ resource: listed.resource, listed: true });
    });
  }

  const server = await new Promise<Server>((resolve, reject) => {
    const s = serve({ fetch: app.fetch, hostname: options.host ?? '127.0.0.1', port: options.port ?? 0 }, () =>
      resolve(s as Server),
    );
    (s as Server).once('error', reject);
  });
  const port = (server.address() as AddressInfo).port;
  const host = options.host ?? '127.0.0.1';
  let closing: Promise<void> | undefined;
  return {
    url: `http://${host.includes(':') ? `[${host}]` : host}:${port}`,
    port,
    resources: () => catalogue.list({}),
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

type ProbeOutcome =
  | { kind: 'required'; required: PaymentRequired }
  | { kind: 'gone'; status: number }
  | { kind: 'error'; status: 422 | 502; error: string };

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

/** The bazaar catalogue: one listing per canonical resource URL, newest last. */
class Catalogue {
  private readonly entries = new Map<string, DiscoveryResource>();

  constructor(private readonly max: number) {}

  /** Lists what a verified or settled payment describes (its payload echoes the resource's bazaar declaration). */
  fromPayment(payload: PaymentPayload, requirements: PaymentRequirements): DiscoveryResource | undefined {
    return this.add(payload, [requirements]);
  }

  /** Lists what a resource's 402 declares, under the URL it was fetched at. */
  fromPaymentRequired(url: string, required: PaymentRequired): DiscoveryResource | undefined {
    if (required.accepts.length === 0) return undefined;
    const payload: PaymentPayload = {
      x402Version: required.x402Version,
      resource: { ...required.resource, url },
      accepted: required.accepts[0],
      payload: {},
      ...(required.extensions ? { extensions: required.extensions } : {}),
    };
    return this.add(payload, required.accepts);
  }

  remove(url: string): void {
    try {
      const u = new URL(url);
      this.entries.delete(`${u.origin}${u.pathname}`);
    } catch {
      // not a URL: nothing listed under it
    }
  }

  list(filters: Filters): DiscoveryResource[] {
    return [...this.entries.values()].filter((r) => matches(r, filters));
  }

  /** Every query word (case-insensitive) must appear in what a listing says: its URL, description, tags or schema. */
  search(query: string, filters: Filters): DiscoveryResource[] {
    const words = query.toLowerCase().split(/[^\p{L}\p{N}_]+/u).filter(Boolean);
    return this.list(filters).filter((r) => {
      const text = searchableText(r);
      return words.every((w) => text.includes(w));
    });
  }

  private add(payload: PaymentPayload, accepts: PaymentRequirements[]): DiscoveryResource | undefined {
    let discovered: ReturnType<typeof extractDiscoveryInfo>;
    try {
      discovered = extractDiscoveryInfo(payload, accepts[0], true);
    } catch {
      return undefined; // no URL or no valid declaration: nothing to list
    }
    if (!discovered) return undefined;
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
    this.entries.set(entry.resource, entry);
    while (this.entries.size > this.max) this.entries.delete(this.entries.keys().next().value as string);
    return entry;
  }
}

function matches(r: DiscoveryResource, f: Filters): boolean {
  if (f.type && r.type !== f.type) return false;
  if (f.extensions && !(r.extensions && f.extensions in r.extensions)) return false;
  return r.accepts.some(
    (a) =>
      (!f.payTo || a.payTo.toLowerCase() === f.payTo.toLowerCase()) &&
      (!f.scheme || a.scheme === f.scheme) &&
      (!f.network || a.network === f.network),
  );
}

/** What a search looks in: the listing's words, and its bazaar declaration (the example input, the input schema). */
function searchableText(r: DiscoveryResource): string {
  const bazaar = r.extensions?.[BAZAAR.key] as
    | { info?: unknown; schema?: { properties?: { input?: { properties?: { body?: unknown } } } } }
    | undefined;
  const inputSchema = bazaar?.schema?.properties?.input?.properties?.body ?? {};
  return [r.resource, r.description ?? '', r.serviceName ?? '', ...(r.tags ?? []), JSON.stringify([bazaar?.info ?? {}, inputSchema])]
    .join('\n')
    .toLowerCase();
}
