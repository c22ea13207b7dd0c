import { HTTPFacilitatorClient } from '@x402/core/http';
import type { PaymentRequirements } from '@x402/core/types';
import { BAZAAR, withBazaar } from '@x402/extensions/bazaar';
import type { DiscoveryResource } from '@x402/extensions/bazaar';
import { DiscoveryError } from './errors';

export interface DiscoverServicesOptions {
  /** The facilitator whose bazaar catalogue is read (`GET /discovery/resources`, or `/discovery/search` with `query`). */
  facilitatorUrl: string;
  /** Words that must all appear in what a service says of itself (the facilitator decides how it matches). */
  query?: string;
  /** Only services payable on this network (CAIP-2), to this payee, in this scheme. */
  network?: string;
  payTo?: string;
  scheme?: string;
  /** At most this many (the facilitator may cap it); default: the facilitator's page. */
  limit?: number;
  /** Skip this many (listing only; a search pages with its own cursor). */
  offset?: number;
  /** Per request; default 10 s. */
  timeoutMs?: number;
}

/** A service a facilitator lists: one paid HTTP resource and the terms it is sold at. */
export interface DiscoveredService {
  url: string;
  /** The HTTP method its bazaar declaration names (POST for Forge's tools). */
  method?: string;
  description: string;
  /** Base units of `asset` one call costs. */
  price: string;
  asset: string;
  /** The asset's EIP-712 name, when the terms carry it. */
  assetName?: string;
  network: string;
  scheme: string;
  payTo: string;
  /** The JSON Schema of the request body (or query) the service declares. */
  inputSchema?: Record<string, unknown>;
  /** The example input it declares. */
  inputExample?: unknown;
  lastUpdated: string;
}

/**
 * Lists the services a facilitator's bazaar catalogue holds, through @x402/extensions' client
 * (`withBazaar(new HTTPFacilitatorClient(...))`): a search when `query` is given, the listing otherwise, with the
 * network, payee and scheme filters passed on. Each service is shown with the terms of its first payment option on
 * `network` (or its first option), and the input schema of its bazaar declaration.
 * @throws DiscoveryError when the facilitator cannot be reached or refuses.
 */
export async function discoverServices(options: DiscoverServicesOptions): Promise<{ services: DiscoveredService[] }> {
  const client = withBazaar(new HTTPFacilitatorClient({ url: options.facilitatorUrl, timeoutMs: options.timeoutMs ?? 10_000 }));
  const filters = {
    ...(options.network ? { network: options.network } : {}),
    ...(options.payTo ? { payTo: options.payTo } : {}),
    ...(options.scheme ? { scheme: options.scheme } : {}),
    ...(options.limit !== undefined ? { limit: options.limit } : {}),
  };
  let resources: DiscoveryResource[];
  try {
    resources = options.query?.trim()
      ? (await client.extensions.bazaar.search({ query: options.query.trim(), ...filters })).resources
      : (await client.extensions.bazaar.listResources({ ...filters, ...(options.offset ? { offset: options.offset } : {}) })).items;
  } catch (err) {
    throw new DiscoveryError(`The facilitator at ${options.facilitatorUrl} could not list services: ${(err as Error).message}`, {
      cause: err,
    });
  }
  const services: DiscoveredService[] = [];
  for (const resource of resources ?? []) {
    const service = toService(resource, options);
    if (service) services.push(service);
  }
  return { services };
}

function toService(resource: DiscoveryResource, options: DiscoverServicesOptions): DiscoveredService | undefined {
  const accepts = (resource.accepts ?? []).filter(
    (a: PaymentRequirements) =>
      (!options.network || a.network === options.network) &&
      (!options.scheme || a.scheme === options.scheme) &&
      (!options.payTo || a.payTo.toLowerCase() === options.payTo.toLowerCase()),
  );
  const terms = accepts[0];
  if (!terms) return undefined;
  const declared = declaredInput(resource.extensions?.[BAZAAR.key]);
  const assetName = terms.extra?.name;
  return {
    url: resource.resource,
    ...(declared.method ? { method: declared.method } : {}),
    description: resource.description ?? '',
    price: terms.amount,
    asset: terms.asset,
    ...(typeof assetName === 'string' ? { assetName } : {}),
    network: terms.network,
    scheme: terms.scheme,
    payTo: terms.payTo,
    ...(declared.schema ? { inputSchema: declared.schema } : {}),
    ...(declared.example !== undefined ? { inputExample: declared.example } : {}),
    lastUpdated: resource.lastUpdated,
  };
}

/**
 * The input a bazaar declaration describes. Its `info.input` holds the example (a body, query parameters or an MCP
 * tool's input schema) and its `schema` the JSON Schema the example was validated against, under the same key.
 */
function declaredInput(extension: unknown): { method?: string; schema?: Record<string, unknown>; example?: unknown } {
  if (!extension || typeof extension !== 'object') return {};
  const { info, schema } = extension as {
    info?: { input?: Record<string, unknown> };
    schema?: { properties?: { input?: { properties?: Record<string, unknown> } } };
  };
  const input = info?.input ?? {};
  const method = typeof input.method === 'string' ? input.method : undefined;
  if (input.type === 'mcp') return { schema: asObject(input.inputSchema), example: input.example };
  const key = 'body' in input || 'bodyType' in input ? 'body' : 'queryParams';
  return { method, schema: asObject(schema?.properties?.input?.properties?.[key]), example: input[key] };
}

function asObject(value: unknown): Record<string, unknown> | undefined {
  return value && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
}
