import type { FacilitatorClient } from '@x402/core/server';
import type { AssetAmount, Network } from '@x402/core/types';
import type { x402Facilitator } from '@x402/core/facilitator';
import { startAnvil } from './anvil';
import { EIP3009_TOKEN, TRY_AGGREGATE } from './contracts/artifacts';
import { LocalNetworkError } from './errors';
import { createLocalFacilitator } from './local-facilitator';
import { viem, viemAccounts, type Address, type Hash, type Hex, type PrivateKeyAccount } from './viem';

/** Chain id of the local network: the one every local EVM tool uses (viem's `anvil`/`foundry`/`hardhat` chains). */
export const LOCAL_CHAIN_ID = 31337;
/** The same chain as x402 names networks (CAIP-2). */
export const LOCAL_NETWORK: Network = `eip155:${LOCAL_CHAIN_ID}`;
/** Where chains x402 pays on have Multicall3, which the `exact` facilitator reads through (see TryAggregate.sol). */
export const MULTICALL3_ADDRESS: Address = '0xcA11bde05977b3631167028862bE2a173976CA11';

/** The deployed EIP-3009 token: what payment requirements name as `asset` and `extra.name` / `extra.version`. */
export interface LocalToken {
  address: Address;
  name: string;
  symbol: string;
  /** EIP-712 domain version. */
  version: string;
  decimals: number;
}

/** A throwaway wallet of the local network; its key exists only in this process. */
export interface LocalWallet {
  privateKey: Hex;
  account: PrivateKeyAccount;
  address: Address;
}

/** A running local x402 network. Everything in it dies with `stop()`: the chain keeps no state on disk. */
export interface LocalX402Network {
  rpcUrl: string;
  chainId: typeof LOCAL_CHAIN_ID;
  network: Network;
  token: LocalToken;
  /** The official facilitator, settling on this chain. */
  facilitator: x402Facilitator;
  /** The same facilitator as a resource server takes it (`new x402ResourceServer(facilitatorClient)`). */
  facilitatorClient: FacilitatorClient;
  /** The account that submits settlements. */
  facilitatorAddress: Address;
  /** A price of `amount` base units of the token (10^-decimals), as an x402 route's `price` takes it. */
  price(amount: bigint): AssetAmount;
  /** Mints `amount` base units of the token to `address`; resolves once mined. */
  fund(address: Address, amount: bigint): Promise<Hash>;
  /** The token balance of `address`, read from the chain. */
  balanceOf(address: Address): Promise<bigint>;
  /** Whether the EIP-3009 authorization `nonce` of `authorizer` has been used (or canceled), read from the chain. */
  authorizationState(authorizer: Address, nonce: Hex): Promise<boolean>;
  /**
   * A new wallet from `generatePrivateKey()`, holding `tokens` base units of the token when given, and gas money (a
   * payer cancels an authorization it gave up on with a transaction of its own) unless `gas: false`.
   */
  newWallet(tokens?: bigint, options?: { gas?: boolean }): Promise<LocalWallet>;
  /** Stops the chain. Idempotent. */
  stop(): Promise<void>;
}

export interface LocalX402NetworkOptions {
  /** Token name and EIP-712 domain name (default "Forge Local USD"). */
  tokenName?: string;
  tokenSymbol?: string;
  /** EIP-712 domain version (default "2", as USDC's). */
  tokenVersion?: string;
  /** Default 6, as USDC's. */
  tokenDecimals?: number;
}

/** Gas money for the accounts that send transactions (deployer, facilitator): 1000 ETH, set, not mined. */
const GAS_MONEY = 10n ** 21n;

function newWallet(): LocalWallet {
  const privateKey = viemAccounts.generatePrivateKey();
  // A nonce manager hands out nonces locally: concurrent mints or settlements from one account get distinct ones.
  const account = viemAccounts.privateKeyToAccount(privateKey, { nonceManager: viemAccounts.nonceManager });
  return { privateKey, account, address: account.address };
}

/**
 * Starts the local x402 network: anvil (chain id 31337, random loopback port), the EIP-3009 token deployed from
 * its shipped bytecode by a fresh deployer (its minter), Multicall3's tryAggregate at the canonical address, and the
 * official x402 facilitator with the `exact` EVM scheme settling from a fresh account. Nothing is mocked: a payment
 * is a transferWithAuthorization mined on this chain.
 * @throws LocalNetworkError when anvil cannot start or a deployment fails (the chain is stopped first).
 */
export async function startLocalX402Network(options: LocalX402NetworkOptions = {}): Promise<LocalX402Network> {
  const token = {
    name: options.tokenName ?? 'Forge Local USD',
    symbol: options.tokenSymbol ?? 'fUSD',
    version: options.tokenVersion ?? '2',
    decimals: options.tokenDecimals ?? 6,
  };
  const anvil = await startAnvil({ chainId: LOCAL_CHAIN_ID });
  try {
    const chain = viem.defineChain({
      id: LOCAL_CHAIN_ID,
      name: 'Forge local x402 network',
      nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 },
      rpcUrls: { default: { http: [anvil.rpcUrl] } },
    });
    // Receipts are polled every 100 ms rather than viem's default 4 s: blocks are mined as transactions arrive.
    const transport = viem.http(anvil.rpcUrl);
    const publicClient = viem.createPublicClient({ chain, transport, pollingInterval: 100 });
    const testClient = viem.createTestClient({ chain, transport, mode: 'anvil' });
    const deployer = newWallet();
    const settler = newWallet();
    await Promise.all([
      testClient.setBalance({ address: deployer.address, value: GAS_MONEY }),
      testClient.setBalance({ address: settler.address, value: GAS_MONEY }),
    ]);
    const deployerClient = viem.createWalletClient({ account: deployer.account, chain, transport, pollingInterval: 100 });

    const deploy = async (hash: Hash, what: string): Promise<Address> => {
      const receipt = await publicClient.waitForTransactionReceipt({ hash });
      if (receipt.status !== 'success' || !receipt.contractAddress) {
        throw new LocalNetworkError(`Deploying ${what} failed (transaction ${hash}, status ${receipt.status})`);
      }
      // Checksummed, as viem returns addresses read from the chain and x402 echoes them in payment requirements.
      return viem.getAddress(receipt.contractAddress);
    };
    const [tokenAddress, aggregatorAddress] = await Promise.all([
      deployerClient
        .deployContract({
          abi: EIP3009_TOKEN.abi,
          bytecode: EIP3009_TOKEN.bytecode,
          args: [token.name, token.symbol, token.version, token.decimals],
        })
        .then((hash) => deploy(hash, EIP3009_TOKEN.contractName)),
      deployerClient
        .deployContract({ abi: TRY_AGGREGATE.abi, bytecode: TRY_AGGREGATE.bytecode })
        .then((hash) => deploy(hash, TRY_AGGREGATE.contractName)),
    ]);
    // anvil_setCode wants runtime code: take what the deployment left at its own address.
    const aggregatorCode = await publicClient.getCode({ address: aggregatorAddress });
    if (!aggregatorCode) throw new LocalNetworkError('TryAggregate deployed no code');
    await testClient.setCode({ address: MULTICALL3_ADDRESS, bytecode: aggregatorCode });

    const local = createLocalFacilitator(
      viem.createWalletClient({ account: settler.account, chain, transport, pollingInterval: 100 }),
      LOCAL_NETWORK,
    );
    const tokenContract = { address: tokenAddress, abi: EIP3009_TOKEN.abi } as const;

    const fund = async (address: Address, amount: bigint): Promise<Hash> => {
      const hash = await deployerClient.writeContract({ ...tokenContract, functionName: 'mint', args: [address, amount] });
      const receipt = await publicClient.waitForTransactionReceipt({ hash });
      if (receipt.status !== 'success') throw new LocalNetworkError(`Minting to ${address} failed (transaction ${hash})`);
      return hash;
    };
    return {
      rpcUrl: anvil.rpcUrl,
      chainId: LOCAL_CHAIN_ID,
      network: LOCAL_NETWORK,
      token: { address: tokenAddress, ...token },
      facilitator: local.facilitator,
      facilitatorClient: local.client,
      facilitatorAddress: local.address,
      price: (amount) => ({
        amount: amount.toString(),
        asset: tokenAddress,
        // The exact scheme's client signs with this EIP-712 domain; the facilitator checks it against the token.
        extra: { name: token.name, version: token.version },
      }),
      fund,
      balanceOf: (address) => publicClient.readContract({ ...tokenContract, functionName: 'balanceOf', args: [address] }),
      authorizationState: (authorizer, nonce) =>
        publicClient.readContract({ ...tokenContract, functionName: 'authorizationState', args: [authorizer, nonce] }),
      newWallet: async (tokens, options = {}) => {
        const wallet = newWallet();
        if (options.gas !== false) await testClient.setBalance({ address: wallet.address, value: GAS_MONEY });
        if (tokens !== undefined && tokens > 0n) await fund(wallet.address, tokens);
        return wallet;
      },
      stop: anvil.stop,
    };
  } catch (err) {
    await anvil.stop();
    throw err;
  }
}
