import { HTTPFacilitatorClient, type FacilitatorClient } from '@x402/core/server';
import type { Network } from '@x402/core/types';
import type { X402Config } from '../config';
import { atCheckpoint, type SaleCheckpoint } from '../contract/fault-points';
import { parseHostPort } from '../contract/host-port';
import type { ToolRegistry } from '../registry';
import { startFacilitatorServer, type FacilitatorServer } from './facilitator-server';
import type { Ledger, RecordInResult } from './ledger';
import type { X402Runtime } from './runtime';
import { startSeller, type Offer, type SaleRecord, type Seller, type SellerRefresh } from './seller';
import { viem } from './viem';

/** The asset sales are priced in: a token with its EIP-712 domain (what buyers sign with). */
export interface SaleAsset {
  address: string;
  name: string;
  version: string;
  /** The token's decimals: a price in money (`$0.01`) is that many tokens times 10^decimals base units. */
  decimals: number;
  network: Network;
}

/** The worker's selling side: its x402 resource server, and (FORGE_X402_DEV) the facilitator it settles through. */
export interface Sales {
  /** The seller's origin; a tool is sold at `<url>/tools/<name>`. */
  url: string;
  asset: SaleAsset;
  payTo: string;
  /** The facilitator buyers and `forge services` can ask (discovery), when this worker knows one. */
  facilitatorUrl?: string;
  /** Re-reads the offers and the active tools; resolves with the routes now sold. */
  refresh(): Promise<SellerRefresh>;
  close(): Promise<void>;
}

const EIP712_DOMAIN_ABI = [
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
  { type: 'function', name: 'name', stateMutability: 'view', inputs: [], outputs: [{ name: '', type: 'string' }] },
  { type: 'function', name: 'version', stateMutability: 'view', inputs: [], outputs: [{ name: '', type: 'string' }] },
  { type: 'function', name: 'decimals', stateMutability: 'view', inputs: [], outputs: [{ name: '', type: 'uint8' }] },
] as const;

/**
 * The token's EIP-712 domain name and version, from the chain (EIP-5267, else `name()` and `version()` as USDC has),
 * and its ERC-20 `decimals()`.
 */
async function domainOf(rpcUrl: string, asset: string): Promise<{ name: string; version: string; decimals: number }> {
  const client = viem.createPublicClient({ transport: viem.http(rpcUrl) });
  const address = viem.getAddress(asset);
  const domain = async () => {
    try {
      const d = await client.readContract({ address, abi: EIP712_DOMAIN_ABI, functionName: 'eip712Domain' });
      return { name: d[1], version: d[2] };
    } catch {
      const [name, version] = await Promise.all([
        client.readContract({ address, abi: EIP712_DOMAIN_ABI, functionName: 'name' }),
        client.readContract({ address, abi: EIP712_DOMAIN_ABI, functionName: 'version' }),
      ]);
      return { name, version };
    }
  };
  const [{ name, version }, decimals] = await Promise.all([domain(), client.readContract({ address, abi: EIP712_DOMAIN_ABI, functionName: 'decimals' })]);
  return { name, version, decimals };
}

/**
 * Writes a step of a sale to the ledger (its `in` row, keyed by the payment's nonce).
 * @throws Error when the ledger has closed that payment already in another status (a reservation of a payment that
 * reconciliation failed): the seller then does not settle it.
 */
export async function recordSale(ledger: Pick<Ledger, 'recordIn'>, sale: SaleRecord): Promise<RecordInResult> {
  const recorded = await ledger.recordIn({
    nonce: sale.nonce,
    counterparty: sale.payer,
    resource: sale.resource,
    tool: sale.tool,
    amount: sale.amount,
    asset: sale.asset,
    network: sale.network,
    status: sale.status,
    txHash: sale.txHash,
    reason: sale.reason,
  });
  if (recorded.outcome === 'conflict') {
    throw new Error(`payment ${sale.nonce} is ${recorded.row.status} in the ledger already, so it is not ${sale.status} now; sign a new one`);
  }
  return recorded;
}

/**
 * Starts selling: the offers in the ledger, for tools that are active in `registry`, as paid routes of one x402 resource
 * server (src/x402/seller.ts), each sale a ledger row. With the local network (FORGE_X402_DEV) the worker also serves
 * its facilitator over HTTP, with bazaar discovery, and the seller lists its tools there.
 */
export async function startSales(input: {
  config: X402Config;
  runtime: X402Runtime;
  ledger: Ledger;
  registry: ToolRegistry;
  onError: (error: unknown) => void;
  /** Called around each ledger write of a sale (the chaos matrix's `sale:` fault points); nothing by default. */
  checkpoint?: SaleCheckpoint;
  /**
   * The secret this worker's seller registers its tools with (a bearer token on `POST /discovery/register`), kept in a
   * private file under FORGE_HOME (see x402-worker.ts): its own facilitator server (FORGE_X402_DEV) knows it at once.
   * Without it a Forge facilitator lists the tools from their first paid call only.
   */
  discoveryToken?: string;
  /** Where what changed at start is said (offers re-derived for the current token and payee). */
  log?: (line: string) => void;
}): Promise<Sales> {
  const { config, runtime, ledger, registry, checkpoint } = input;
  let facilitatorServer: FacilitatorServer | undefined;
  let facilitator: FacilitatorClient;
  let asset: SaleAsset;
  if (runtime.local) {
    facilitatorServer = await startFacilitatorServer({ facilitator: runtime.local.facilitator });
    facilitator = new HTTPFacilitatorClient({ url: facilitatorServer.url });
    const { token } = runtime.local;
    asset = { address: token.address, name: token.name, version: token.version, decimals: token.decimals, network: runtime.local.network };
  } else {
    facilitator = new HTTPFacilitatorClient({ url: config.facilitatorUrl as string });
    const address = config.sell.asset as string;
    asset = { address, network: config.sell.network as Network, ...(await domainOf(runtime.rpcUrl as string, address)) };
  }
  const facilitatorUrl = facilitatorServer?.url ?? config.facilitatorUrl;
  const payTo = runtime.payTo as string;
  // The dev network's token and wallet are this worker's: an offer written under another chain (one whose state was
  // lost, or another worker's) is sold, and rewritten once at start, in the current token, network and payee, so that
  // nothing is ever quoted in a token or to a wallet that no longer exists.
  if (runtime.local) await rebaseOffers(ledger, { asset: asset.address, network: asset.network, payTo }, input.log);
  const offers = async (): Promise<Offer[]> => {
    if (!(await ledger.isReady())) return [];
    const sold: Offer[] = [];
    for (const listed of await ledger.listOffers()) {
      const offer = runtime.local ? { ...listed, asset: asset.address, network: asset.network, payTo } : listed;
      // A tool that is gone or quarantined is not sold (its offer stays, and sells again once it is active).
      const tool = registry.get(offer.tool);
      if (!tool) continue;
      const schema = tool.inputJsonSchema as Record<string, unknown> | undefined;
      sold.push({
        tool: offer.tool,
        price: BigInt(offer.price),
        asset: offer.asset,
        assetName: asset.name,
        assetVersion: asset.version,
        payTo: offer.payTo,
        description: offer.description || tool.description || `${offer.tool} (v${tool.version}), an agent-authored tool sold through Forge`,
        inputSchema: schema && schema.type === 'object' ? schema : { type: 'object' },
      });
    }
    return sold;
  };
  let seller: Seller;
  try {
    seller = await startSeller({
      facilitator,
      network: asset.network,
      offers,
      invoke: (tool, toolInput, options) => registry.invoke(tool, toolInput, options),
      // `reserved` before settlement, then the outcome on the same row: a worker that dies between the two leaves a
      // reserved row that reconciliation settles or fails from the chain.
      onSale: async (sale) => {
        const step = sale.status === 'reserved' ? 'reserveSale' : 'recordSale';
        await atCheckpoint(checkpoint, step, () => recordSale(ledger, sale));
      },
      onError: input.onError,
      ...parseHostPort(config.sellAddress as string),
      // Forge's facilitator server lists a route when its registrant asks (POST /discovery/register with the token, for
      // URLs at the seller's origin only); a hosted one that has no such endpoint lists it after its first sale, and the
      // failed announcement is only logged. The token goes only to the facilitator the operator configured.
      discoveryUrl: facilitatorUrl,
      discoveryToken: input.discoveryToken,
      // Its own facilitator lets this seller register URLs at the origin it serves, and no other.
      onListening: (origin: string) => {
        if (input.discoveryToken) facilitatorServer?.addRegistrant({ token: input.discoveryToken, origin });
      },
    });
  } catch (err) {
    await facilitatorServer?.close();
    throw err;
  }
  // Active tools change (a deployment, a rollback, a quarantine): what is sold follows.
  const stopFollowing = registry.onChange(() => void seller.refresh().catch(input.onError));
  return {
    url: seller.url,
    asset,
    payTo,
    facilitatorUrl,
    refresh: () => seller.refresh(),
    close: async () => {
      stopFollowing();
      await seller.close();
      await facilitatorServer?.close();
    },
  };
}

/**
 * Rewrites the offers that quote another token, network or payee than `current` (their price and description stay).
 * Said in `log` when any changed.
 */
async function rebaseOffers(
  ledger: Pick<Ledger, 'isReady' | 'listOffers' | 'putOffer'>,
  current: { asset: string; network: string; payTo: string },
  log: ((line: string) => void) | undefined,
): Promise<void> {
  if (!(await ledger.isReady())) return;
  const same = (a: string, b: string) => a.toLowerCase() === b.toLowerCase();
  const stale = (await ledger.listOffers()).filter((o) => !same(o.asset, current.asset) || o.network !== current.network || !same(o.payTo, current.payTo));
  for (const o of stale) await ledger.putOffer({ tool: o.tool, price: o.price, description: o.description, ...current });
  if (stale.length > 0) {
    log?.(
      `forge: x402 offers of ${stale.map((o) => o.tool).join(', ')} now quote ${current.asset} on ${current.network}, paid to ${current.payTo} (the dev network's current token and wallet)`,
    );
  }
}
