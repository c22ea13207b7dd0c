import type { ToolStore } from '../db';
import { TOOL_ROUTE_PREFIX, type SellInput, type SellResult } from '../contract/pay-runs';
import { formatBaseUnits, moneyToBaseUnits, parsePrice } from '../contract/price';
import type { Ledger } from '../x402/ledger';
import type { Sales } from '../x402/sales';

/** What selling needs: the ledger's offers, the tool store, and this worker's seller (or why it has none). */
export interface SellActivityDeps {
  ledger: Pick<Ledger, 'putOffer' | 'removeOffer'>;
  tools: Pick<ToolStore, 'getActive'>;
  sales: () => Sales | undefined;
  /** Why this worker cannot sell, when `sales()` is undefined. */
  salesUnavailable: () => string | undefined;
  /** Tells every worker's seller that the offers changed. */
  announce: () => Promise<void>;
}

type SellOutcome = Omit<SellResult, 'workflowId'>;

/** SellToolWorkflow's step: the offer written in the ledger, and this worker's seller serving it before the answer. */
export function createSellActivities(deps: SellActivityDeps) {
  return {
    async offerTool(input: SellInput): Promise<SellOutcome> {
      const { tool } = input;
      const sales = deps.sales();
      if (!sales) return { status: 'refused', tool, reason: `this worker does not sell: ${deps.salesUnavailable() ?? 'the seller did not start'}` };
      if (input.stop) {
        const removed = await deps.ledger.removeOffer(tool);
        await deps.announce();
        await sales.refresh();
        return removed ? { status: 'withdrawn', tool } : { status: 'refused', tool, reason: `${tool} is not offered for sale` };
      }
      // The price first: money becomes base units with the sale asset's decimals, which only this worker knows.
      const given = parsePrice(input.price ?? '');
      const converted = 'error' in given ? given : 'money' in given ? moneyToBaseUnits(given.money, sales.asset.decimals) : given;
      if ('error' in converted) return { status: 'refused', tool, reason: converted.error, problem: 'price' };
      const price = converted.baseUnits;
      const active = await deps.tools.getActive(tool);
      if (!active) return { status: 'refused', tool, reason: `no tool ${tool} is active: deploy it first (forge deploy), then sell it` };
      await deps.ledger.putOffer({ tool, price, asset: sales.asset.address, network: sales.asset.network, payTo: sales.payTo, description: input.description });
      await deps.announce();
      const refreshed = await sales.refresh();
      const skipped = refreshed.skipped.find((s) => s.tool === tool);
      if (skipped) return { status: 'refused', tool, reason: `the offer was not put on sale: ${skipped.reason}` };
      const warnings = refreshed.warnings.filter((w) => w.tool === tool).map((w) => w.reason);
      return {
        status: 'offered',
        tool,
        url: `${sales.url}${TOOL_ROUTE_PREFIX}${tool}`,
        price,
        ...('money' in given ? { priceGiven: input.price } : {}),
        decimals: sales.asset.decimals,
        priceInTokens: formatBaseUnits(BigInt(price), sales.asset.decimals),
        asset: sales.asset.address,
        network: sales.asset.network,
        payTo: sales.payTo,
        ...(warnings.length > 0 ? { warnings } : {}),
      };
    },
  };
}

export type SellActivities = ReturnType<typeof createSellActivities>;
