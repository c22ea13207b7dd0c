import type { X402Config } from '../config';
import type * as DevNetworkStateModule from './dev-network-state';
import type * as LocalNetworkModule from './local-network';
import type { LocalX402Network } from './local-network';
import type { SpendPolicy } from './spend-policy';
import type * as ViemAccountsModule from './viem-accounts';
import type { Hex } from './viem';

/*
 * Every worker starts its x402 side, and most never pay or sell. So what pays, sells or asks a chain (viem, @x402/*,
 * hono: ~0.25 s of loading, a tenth of a worker's start) loads only where it is used: here viem's accounts alone for a
 * wallet's address, all of it with the dev network; in the seller only on a worker that sells; in the pay steps at the
 * first payment. A worker restarted after a crash polls that much sooner.
 */
// Only viem's accounts: the address is all a worker needs of a wallet before its first payment.
// eslint-disable-next-line @typescript-eslint/no-require-imports
const viemAccounts = (): typeof ViemAccountsModule.viemAccounts => (require('./viem-accounts') as typeof ViemAccountsModule).viemAccounts;
// eslint-disable-next-line @typescript-eslint/no-require-imports
const localNetworkModule = (): typeof LocalNetworkModule => require('./local-network');
// eslint-disable-next-line @typescript-eslint/no-require-imports
const devNetworkStateModule = (): typeof DevNetworkStateModule => require('./dev-network-state');

/** What the dev wallet holds at start: 100.00 of the local 6-decimals token. */
export const DEV_WALLET_FUNDS = 100_000_000n;

/** The worker's x402 side as configured: the wallet, the policy, the chain, and (FORGE_X402_DEV) the local network. */
export interface X402Runtime {
  policy: SpendPolicy;
  walletKey: () => Hex | undefined;
  /** The wallet's address (where sales are paid unless FORGE_X402_PAY_TO says otherwise), when there is a wallet. */
  address?: string;
  payTo?: string;
  rpcUrl?: string;
  /** The local network this worker runs (FORGE_X402_DEV), with its token and facilitator. */
  local?: LocalX402Network;
  stop(): Promise<void>;
}

/**
 * Resolves the x402 configuration for one worker. With FORGE_X402_DEV the worker starts the local network (a real
 * chain in a child process, stopped with the worker), with a wallet funded once with {@link DEV_WALLET_FUNDS}, and
 * allows the local token. Given `home` (FORGE_HOME), the network is kept in `$FORGE_HOME/x402-dev`: a restart, clean
 * or a SIGKILL, finds the same chain, token, wallet and balances (see local-network.ts); the wallet's key is kept there,
 * private, unless FORGE_X402_WALLET_KEY names one. Without `home` the chain and wallet are throwaway.
 */
export async function startX402Runtime(config: X402Config, log: (line: string) => void, options: { home?: string } = {}): Promise<X402Runtime> {
  let walletKey = config.walletKey;
  let rpcUrl = config.rpcUrl;
  let allowedAssets = config.policy.allowedAssets;
  let local: LocalX402Network | undefined;
  if (config.dev && !rpcUrl) {
    local = await localNetworkModule().startLocalX402Network({
      ...(options.home ? { stateDir: devNetworkStateModule().devNetworkDirOf(options.home) } : {}),
      log,
    });
    const configured = config.walletKey();
    const key = configured ?? (await local.keptWallet('wallet')).privateKey;
    await local.fundOnce(viemAccounts().privateKeyToAccount(key).address, DEV_WALLET_FUNDS);
    walletKey = () => key;
    rpcUrl = local.rpcUrl;
    allowedAssets = [...new Set([...allowedAssets, local.token.address.toLowerCase()])];
    log(`forge: x402 dev network at ${local.rpcUrl} (chain ${local.chainId}); token ${local.token.symbol} at ${local.token.address}`);
  }
  const key = walletKey();
  const address = key ? viemAccounts().privateKeyToAccount(key).address : undefined;
  if (address && local) {
    log(
      `forge: x402 wallet ${address} holds ${await local.balanceOf(address as `0x${string}`)} base units of ${local.token.symbol}${local.durable ? ' (kept across restarts)' : ''}`,
    );
  } else if (address) {
    log(`forge: x402 wallet ${address}`);
  }
  return {
    policy: { ...config.policy, allowedAssets },
    walletKey,
    address,
    payTo: config.payTo ?? address,
    rpcUrl,
    local,
    stop: async () => {
      await local?.stop();
    },
  };
}

/** Why selling is off on this worker, or undefined when it can sell. */
export function salesUnavailable(config: X402Config, runtime: X402Runtime): string | undefined {
  if (!config.sellAddress) return 'FORGE_X402_SELL_ADDRESS=off';
  if (!runtime.payTo) return 'no address to be paid at: set FORGE_X402_PAY_TO (or a wallet, FORGE_X402_WALLET_KEY)';
  if (!runtime.local && !config.facilitatorUrl) return 'no facilitator: set FORGE_X402_FACILITATOR_URL (or FORGE_X402_DEV=1)';
  if (!runtime.local && (!config.sell.asset || !config.sell.network)) return 'no sale asset: set FORGE_X402_SELL_ASSET and FORGE_X402_SELL_NETWORK';
  if (!runtime.local && !runtime.rpcUrl) return "no chain to read the sale asset's EIP-712 domain from: set FORGE_X402_RPC_URL";
  return undefined;
}
