import type { X402Config } from '../config';
import { startLocalX402Network, type LocalX402Network } from './local-network';
import type { SpendPolicy } from './spend-policy';
import { viemAccounts, type Hex } from './viem';

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
 * chain in a child process, torn down with the worker), makes a throwaway wallet funded with {@link DEV_WALLET_FUNDS},
 * and allows the local token; its key stays in this process's memory.
 */
export async function startX402Runtime(config: X402Config, log: (line: string) => void): Promise<X402Runtime> {
  let walletKey = config.walletKey;
  let rpcUrl = config.rpcUrl;
  let allowedAssets = config.policy.allowedAssets;
  let local: LocalX402Network | undefined;
  if (config.dev && !rpcUrl) {
    local = await startLocalX402Network();
    const configured = config.walletKey();
    const key = configured ?? (await local.newWallet()).privateKey;
    await local.fund(viemAccounts.privateKeyToAccount(key).address, DEV_WALLET_FUNDS);
    walletKey = () => key;
    rpcUrl = local.rpcUrl;
    allowedAssets = [...new Set([...allowedAssets, local.token.address.toLowerCase()])];
    log(`forge: x402 dev network at ${local.rpcUrl} (chain ${local.chainId}); token ${local.token.symbol} at ${local.token.address}`);
  }
  const key = walletKey();
  const address = key ? viemAccounts.privateKeyToAccount(key).address : undefined;
  if (address) log(`forge: x402 wallet ${address}${local ? ` holds ${DEV_WALLET_FUNDS} base units of ${local.token.symbol}` : ''}`);
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
