import path from 'node:path';
import type { ForgeConfig } from '../config';
import { saleFaults } from '../activities/fault-points';
import { createPayActivities, payingSide, type PayActivities } from '../activities/pay-activities';
import { createSellActivities, type SellActivities } from '../activities/sell-activities';
import type { X402Info } from '../contract/pay-runs';
import type { ForgeDatabase, ToolStore } from '../db';
import { ToolRegistry } from '../registry';
import { homeSecret } from '../process/home-secret';
import { createLedger, LEDGER_MIGRATION_NAME, LEDGER_MIGRATION_SQL } from '../x402/ledger';
import type * as ReconcileModule from '../x402/reconcile';
import { salesUnavailable, startX402Runtime } from '../x402/runtime';
import type * as SalesModule from '../x402/sales';
import type { Sales } from '../x402/sales';

/** The selling side (hono, @x402/*), loaded only on a worker that sells (see x402/runtime.ts). */
// eslint-disable-next-line @typescript-eslint/no-require-imports
const salesModule = (): typeof SalesModule => require('../x402/sales');
/** What asks the chain about reserved payments, loaded only on a worker whose ledger exists (x402 was used). */
// eslint-disable-next-line @typescript-eslint/no-require-imports
const reconcileModule = (): typeof ReconcileModule => require('../x402/reconcile');

/** Every worker's seller re-reads the offers when one changes (a `forge sell` run on any host). */
const OFFERS_CHANNEL = 'forge_x402_offers';

/** The file under FORGE_HOME (0600) holding the secret the dev facilitator's registration asks of this worker's seller. */
const DISCOVERY_TOKEN_FILE = 'x402-discovery.token';

/** How often a worker asks the chain about payments left reserved: a decision within seconds of the chain's (issue 26). */
const RECONCILE_EVERY_MS = 15_000;

/**
 * When a worker first asks, after its workers poll. The first sweep loads viem and asks the chain (~0.3 s of the main
 * thread): at once, it ran beside the payments a restarted worker took over, whose steps and workflow tasks waited
 * behind it (a signature 0.39 s instead of 0.04, measured 2026-11-30). A row left reserved is decided 2 s later.
 */
const RECONCILE_FIRST_AFTER_MS = 2_000;

/** A worker's x402 side: the steps of PayWorkflow and SellToolWorkflow, what the read API says of it, and its servers. */
export interface X402Worker {
  payActivities: PayActivities;
  sellActivities: SellActivities;
  info(): X402Info;
  /**
   * Starts asking the chain about payments left reserved: RECONCILE_FIRST_AFTER_MS after the call (why: see there),
   * then every RECONCILE_EVERY_MS. Called once the workers poll. Idempotent.
   */
  startReconciling(): void;
  /**
   * Loads the paying side now if payments are in flight (rows reserved in the ledger) and this worker has a wallet:
   * a restarted worker takes those runs over as soon as it polls, and their first step waited ~0.3 s for viem and
   * @x402/* to load on the main thread. Called while the workflow thread loads the bundle, when the main thread has the
   * time: in the fault matrix's payment cells, 0.2-0.4 s less from the restart to the run's end, the start no longer
   * (measured 2026-11-30). Resolves whether it loaded it; never throws (the first step loads it then).
   */
  loadAheadForPaymentsInFlight(): Promise<boolean>;
  stop(): Promise<void>;
}

/**
 * Starts the x402 side of a worker: the wallet and spend policy (with FORGE_X402_DEV, the local network), and, when
 * this worker can sell, its seller over a registry of the active tools. Selling that cannot start is logged and left
 * off (the worker serves everything else); a refused `forge sell` then says why.
 */
export async function startX402Worker(input: {
  config: ForgeConfig;
  database: ForgeDatabase;
  store: ToolStore;
  log: (line: string) => void;
}): Promise<X402Worker> {
  const { config, database, store, log } = input;
  const runtime = await startX402Runtime(config.x402, log, { home: config.home });
  const ledger = createLedger(database);
  let sales: Sales | undefined;
  let registry: ToolRegistry | undefined;
  let unlisten: (() => Promise<void>) | undefined;
  let off = salesUnavailable(config.x402, runtime);
  try {
    if (!off) {
      // The selling side loads only on a worker that sells (see x402/runtime.ts).
      const { startSales } = salesModule();
      registry = await ToolRegistry.open({ dir: config.agentToolsDir, limits: config.sandbox.limits, onReloadError: () => undefined });
      const started = await startSales({
        config: config.x402,
        runtime,
        ledger,
        registry,
        onError: (err) => log(`forge: x402 seller: ${(err as Error)?.message ?? String(err)}`),
        checkpoint: saleFaults(config.faultKillAt),
        // What this worker's seller proves itself with to the facilitator it announces its tools to: its own (FORGE_X402_DEV)
        // takes it at once; a Forge facilitator server elsewhere once given it with the seller's origin (addRegistrant).
        discoveryToken: await homeSecret(path.join(config.home, DISCOVERY_TOKEN_FILE)),
        log,
      }).catch((err: Error) => {
        off = err.message;
        return undefined;
      });
      sales = started;
      if (started) {
        unlisten = await database.listen(OFFERS_CHANNEL, () => void started.refresh().catch(() => undefined));
        const { routes } = await started.refresh();
        log(`forge: selling ${routes.length} tool(s) at ${started.url}/tools/<name> (x402, ${started.asset.network}, paid to ${started.payTo})`);
      } else {
        log(`forge: x402 selling is off: ${off}`);
      }
    }
  } catch (err) {
    await unlisten?.().catch(() => undefined);
    await sales?.close();
    await registry?.close();
    await runtime.stop();
    throw err;
  }
  // Payments left reserved by a run that ended abnormally are settled or failed from the chain: once the workers poll
  // (startReconciling), and every so often.
  const reconcile = async () => {
    if (!(await ledger.isReady())) return;
    // Only a worker whose ledger exists (x402 was used) loads what asks the chain.
    const { reconcileReserved } = reconcileModule();
    const report = await reconcileReserved({ ledger, payer: runtime.address, rpcUrl: runtime.rpcUrl });
    // Open rows (authorizations still usable) are asked about again next time: no line for them every 15 s.
    if (report.settled + report.failed + report.undecided > 0) {
      log(
        `forge: x402 reconciliation: ${report.settled} settled, ${report.failed} failed, ${report.undecided} left reserved (no chain to ask: set FORGE_X402_RPC_URL)`,
      );
    }
  };
  const sweep = () => void reconcile().catch((err: Error) => log(`forge: x402 reconciliation failed (will retry): ${err.message}`));
  let sweeper: NodeJS.Timeout | undefined;
  return {
    payActivities: createPayActivities({
      ledger,
      ledgerMigration: { name: LEDGER_MIGRATION_NAME, sql: LEDGER_MIGRATION_SQL },
      policy: runtime.policy,
      walletKey: runtime.walletKey,
      rpcUrl: runtime.rpcUrl,
    }),
    sellActivities: createSellActivities({
      ledger,
      tools: store,
      sales: () => sales,
      salesUnavailable: () => off,
      announce: () => database.notify(OFFERS_CHANNEL, 'changed'),
    }),
    info: () => ({
      wallet: runtime.address,
      facilitatorUrl: sales?.facilitatorUrl ?? config.x402.facilitatorUrl,
      seller: sales ? { url: sales.url, asset: sales.asset.address, network: sales.asset.network, payTo: sales.payTo } : undefined,
      sellingOff: sales ? undefined : off,
      devNetwork: runtime.local ? { rpcUrl: runtime.local.rpcUrl, chainId: runtime.local.chainId, token: runtime.local.token.address } : undefined,
    }),
    loadAheadForPaymentsInFlight: async () => {
      try {
        if (!runtime.walletKey() || !(await ledger.isReady()) || (await ledger.reservedOlderThan(0)).length === 0) return false;
        payingSide();
        return true;
      } catch {
        return false;
      }
    },
    startReconciling: () => {
      if (sweeper) return;
      sweeper = setTimeout(() => {
        sweep();
        sweeper = setInterval(sweep, RECONCILE_EVERY_MS);
        sweeper.unref();
      }, RECONCILE_FIRST_AFTER_MS);
      sweeper.unref();
    },
    stop: async () => {
      clearTimeout(sweeper); // the first sweep's timeout or the interval: Node clears either
      await unlisten?.().catch(() => undefined);
      await sales?.close();
      await registry?.close();
      await runtime.stop();
    },
  };
}
