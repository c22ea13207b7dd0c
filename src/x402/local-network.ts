import type { FacilitatorClient } from '@x402/core/server';
import type { AssetAmount, Network } from '@x402/core/types';
import type { x402Facilitator } from '@x402/core/facilitator';
import { existsSync } from 'node:fs';
import { startAnvil, type AnvilProcess } from './anvil';
import { EIP3009_TOKEN, TRY_AGGREGATE } from './contracts/artifacts';
import { DevNetworkState, type DevNetworkRecord } from './dev-network-state';
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

/**
 * A running local x402 network. Without `stateDir` everything in it dies with `stop()`: the chain keeps no state on
 * disk. With it, the chain, its token and the wallets it keeps are the same after a restart.
 */
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
  /**
   * The wallet kept under `name`: the same key at every start on the same `stateDir` (a new one the first time, or
   * without `stateDir`).
   */
  keptWallet(name: string): Promise<LocalWallet>;
  /**
   * Gives `address` gas money (set, not mined: at every call) and mints it `amount` unless it was given funds this way
   * on this chain already (remembered in `stateDir`, so a restart does not fund it again); resolves with whether it
   * minted.
   */
  fundOnce(address: Address, amount: bigint): Promise<boolean>;
  /** Whether the chain is kept on disk (`stateDir`, and no other live process holding it). */
  durable: boolean;
  /** Whether this start made the chain anew (always without `stateDir`; with it, the first time or when it was lost). */
  fresh: boolean;
  /** Stops the chain (with `stateDir`, once anvil has written it). Idempotent. */
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
  /**
   * A private directory the network lives in across restarts (FORGE_X402_DEV keeps `$FORGE_HOME/x402-dev`): anvil's
   * state file (written on exit, on the death of this process, and every second) and the record of the token's
   * address and of the keys of its minter, its settler and the wallets kept (see dev-network-state.ts). Unset: nothing
   * is kept.
   */
  stateDir?: string;
  /** Where what happened to the kept chain is said (taken over, made anew, a state file set aside). */
  log?: (line: string) => void;
}

/** Gas money for the accounts that send transactions (deployer, facilitator): 1000 ETH, set, not mined. */
const GAS_MONEY = 10n ** 21n;

function newWallet(): LocalWallet {
  return walletOf(viemAccounts.generatePrivateKey());
}

/**
 * The wallet of `privateKey`. A nonce manager hands out nonces locally: concurrent mints or settlements from one account
 * get distinct ones. A kept key gets a manager of its own network's (`ownNonces`): viem's shared one remembers the last
 * nonce it gave per account, which a chain restarted from its state file may not have reached.
 */
function walletOf(privateKey: Hex, ownNonces?: ReturnType<typeof viem.createNonceManager>): LocalWallet {
  const account = viemAccounts.privateKeyToAccount(privateKey, { nonceManager: ownNonces ?? viemAccounts.nonceManager });
  return { privateKey, account, address: account.address };
}

/** Starts anvil on the kept chain file; one that anvil cannot load is set aside, and the chain starts empty. */
async function startKeptAnvil(state: DevNetworkState | undefined, log: (line: string) => void): Promise<{ anvil: AnvilProcess; lost: boolean }> {
  if (!state) return { anvil: await startAnvil({ chainId: LOCAL_CHAIN_ID }), lost: false };
  try {
    return { anvil: await startAnvil({ chainId: LOCAL_CHAIN_ID, stateFile: state.chainFile }), lost: false };
  } catch (err) {
    if (!existsSync(state.chainFile)) throw err;
    const aside = await state.setChainAside();
    log(
      `forge: x402 dev network: anvil could not load ${state.chainFile} (${(err as Error).message.split('\n')[0]}); set aside as ${aside}, the chain starts anew`,
    );
    return { anvil: await startAnvil({ chainId: LOCAL_CHAIN_ID, stateFile: state.chainFile }), lost: true };
  }
}

/**
 * Starts the local x402 network: anvil (chain id 31337, random loopback port), the EIP-3009 token deployed from
 * its shipped bytecode by a fresh deployer (its minter), Multicall3's tryAggregate at the canonical address, and the
 * official x402 facilitator with the `exact` EVM scheme settling from a fresh account. Nothing is mocked: a payment
 * is a transferWithAuthorization mined on this chain.
 * @throws LocalNetworkError when anvil cannot start or a deployment fails (the chain is stopped first).
 */
export async function startLocalX402Network(options: LocalX402NetworkOptions = {}): Promise<LocalX402Network> {
  const log = options.log ?? (() => undefined);
  const token = {
    name: options.tokenName ?? 'Forge Local USD',
    symbol: options.tokenSymbol ?? 'fUSD',
    version: options.tokenVersion ?? '2',
    decimals: options.tokenDecimals ?? 6,
  };
  let state: DevNetworkState | undefined = options.stateDir ? new DevNetworkState(options.stateDir) : undefined;
  if (state) {
    const taken = await state.acquire();
    if (!taken.ok) {
      log(`forge: x402 dev network: ${state.dir} is in use by process ${taken.holder}; this one runs a chain of its own that keeps nothing`);
      state = undefined;
    }
  }
  const kept = state ? await state.readRecord() : undefined;
  if (state && !kept && existsSync(state.chainFile)) {
    // A chain without its record: nothing on it can be found again (whose token, whose keys), so it starts empty.
    await state.setChainAside();
  }
  const { anvil, lost } = await startKeptAnvil(state, log).catch(async (err: unknown) => {
    await state?.release();
    throw err;
  });
  try {
    await state?.noteAnvil(anvil.pid);
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
    const nonces = viem.createNonceManager({
      source: { get: ({ address }) => publicClient.getTransactionCount({ address, blockTag: 'pending' }), set: () => undefined },
    });

    // The kept chain must still hold the token the record names (a SIGKILL of anvil itself may have lost the blocks
    // that deployed it), as the same token; otherwise it is made anew, and the wallets kept are funded again.
    let reuse = kept !== undefined;
    if (kept && (lost || kept.chainId !== LOCAL_CHAIN_ID || !sameToken(kept.token, token) || !(await hasCode(publicClient, kept.token.address)))) {
      log(
        `forge: x402 dev network: the kept chain no longer holds ${kept.token.symbol} at ${kept.token.address}; a new token is deployed and the kept wallets are funded again`,
      );
      reuse = false;
    }
    const deployer = kept ? walletOf(kept.deployerKey, nonces) : walletOf(viemAccounts.generatePrivateKey(), nonces);
    const settler = kept ? walletOf(kept.settlerKey, nonces) : walletOf(viemAccounts.generatePrivateKey(), nonces);
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
    const deployToken = () =>
      deployerClient
        .deployContract({
          abi: EIP3009_TOKEN.abi,
          bytecode: EIP3009_TOKEN.bytecode,
          args: [token.name, token.symbol, token.version, token.decimals],
        })
        .then((hash) => deploy(hash, EIP3009_TOKEN.contractName));
    const placeMulticall = async () => {
      if (reuse && (await hasCode(publicClient, MULTICALL3_ADDRESS))) return;
      const aggregatorAddress = await deployerClient
        .deployContract({ abi: TRY_AGGREGATE.abi, bytecode: TRY_AGGREGATE.bytecode })
        .then((hash) => deploy(hash, TRY_AGGREGATE.contractName));
      // anvil_setCode wants runtime code: take what the deployment left at its own address.
      const aggregatorCode = await publicClient.getCode({ address: aggregatorAddress });
      if (!aggregatorCode) throw new LocalNetworkError('TryAggregate deployed no code');
      await testClient.setCode({ address: MULTICALL3_ADDRESS, bytecode: aggregatorCode });
    };
    const [tokenAddress] = await Promise.all([reuse ? Promise.resolve(kept!.token.address) : deployToken(), placeMulticall()]);

    // The record: written once the token is there (and again as wallets are kept and funded). Wallets kept before a
    // chain was lost keep their keys, and are funded again on the new one.
    let record: DevNetworkRecord = {
      version: 1,
      chainId: LOCAL_CHAIN_ID,
      deployerKey: deployer.privateKey,
      settlerKey: settler.privateKey,
      token: { address: tokenAddress, ...token },
      wallets: kept?.wallets ?? {},
      funded: reuse ? (kept?.funded ?? []) : [],
    };
    let saving: Promise<void> = Promise.resolve();
    const save = (change: (r: DevNetworkRecord) => DevNetworkRecord): Promise<void> => {
      record = change(record);
      const snapshot = record;
      saving = saving.catch(() => undefined).then(() => state?.writeRecord(snapshot));
      return saving;
    };
    if (state && !reuse) await save((r) => r);
    if (state)
      log(
        reuse
          ? `forge: x402 dev network: the kept chain in ${state.dir}, token ${token.symbol} at ${tokenAddress}`
          : `forge: x402 dev network: a new chain kept in ${state.dir}`,
      );

    const local = createLocalFacilitator(viem.createWalletClient({ account: settler.account, chain, transport, pollingInterval: 100 }), LOCAL_NETWORK);
    const tokenContract = { address: tokenAddress, abi: EIP3009_TOKEN.abi } as const;

    const fund = async (address: Address, amount: bigint): Promise<Hash> => {
      const hash = await deployerClient.writeContract({ ...tokenContract, functionName: 'mint', args: [address, amount] });
      const receipt = await publicClient.waitForTransactionReceipt({ hash });
      if (receipt.status !== 'success') throw new LocalNetworkError(`Minting to ${address} failed (transaction ${hash})`);
      return hash;
    };
    const funding = new Map<string, Promise<boolean>>();
    const fundOnce = (address: Address, amount: bigint): Promise<boolean> => {
      const key = address.toLowerCase();
      let once = funding.get(key);
      if (!once) {
        once = (async () => {
          // Gas is set, not mined, so it costs nothing to give again: a payer cancels what it gave up on itself.
          await testClient.setBalance({ address, value: GAS_MONEY });
          if (record.funded.includes(key)) return false;
          await fund(address, amount);
          await save((r) => ({ ...r, funded: [...r.funded, key] }));
          return true;
        })();
        funding.set(key, once);
        once.catch(() => funding.delete(key));
      }
      return once;
    };
    const keptWallet = async (name: string): Promise<LocalWallet> => {
      const key = record.wallets[name];
      if (key) return walletOf(key);
      const wallet = newWallet();
      await save((r) => ({ ...r, wallets: { ...r.wallets, [name]: wallet.privateKey } }));
      return wallet;
    };
    const held = state;
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
      authorizationState: (authorizer, nonce) => publicClient.readContract({ ...tokenContract, functionName: 'authorizationState', args: [authorizer, nonce] }),
      newWallet: async (tokens, options = {}) => {
        const wallet = newWallet();
        if (options.gas !== false) await testClient.setBalance({ address: wallet.address, value: GAS_MONEY });
        if (tokens !== undefined && tokens > 0n) await fund(wallet.address, tokens);
        return wallet;
      },
      keptWallet,
      fundOnce,
      durable: held !== undefined,
      fresh: !reuse,
      stop: async () => {
        await saving.catch(() => undefined);
        await anvil.stop();
        await held?.release();
      },
    };
  } catch (err) {
    await anvil.stop();
    await state?.release();
    throw err;
  }
}

function sameToken(a: DevNetworkRecord['token'], b: Omit<LocalToken, 'address'>): boolean {
  return a.name === b.name && a.symbol === b.symbol && a.version === b.version && a.decimals === b.decimals;
}

async function hasCode(client: { getCode(args: { address: Address }): Promise<Hex | undefined> }, address: Address): Promise<boolean> {
  const code = await client.getCode({ address });
  return code !== undefined && code !== '0x';
}
