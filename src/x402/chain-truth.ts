import { EIP3009_TOKEN } from './contracts/artifacts';
import { viem, viemAccounts, type Hex } from './viem';

/**
 * What the chain says about one EIP-3009 authorization Forge signed: the only thing that decides whether a payment
 * happened. A seller's answer, its PAYMENT-RESPONSE or its silence are claims; this module reads the token's own state
 * and events, and cancels on the chain what Forge gives up on, so that "failed" always means "can never move money".
 * The calls are EIP-3009's (`authorizationState`, `AuthorizationUsed`, `AuthorizationCanceled`, `cancelAuthorization`),
 * as on USDC; read through the shipped token's ABI.
 */

/** One authorization, as signed: who pays whom how much, with which nonce, until when. */
export interface SignedAuthorization {
  /** The token contract. */
  asset: string;
  payer: string;
  payTo: string;
  /** Base units. */
  amount: string;
  nonce: Hex;
  /** Unix seconds: the authorization is valid strictly before this. */
  validBefore: number;
}

export type AuthorizationVerdict =
  /** Used by a transfer of exactly this amount from the payer to the payee: paid, in `txHash`. */
  | { state: 'settled'; txHash: Hex }
  /** Used by a cancellation (Forge's or any other): it can never move money. */
  | { state: 'cancelled'; txHash?: Hex }
  /** Not used, and still usable for `secondsLeft` by the chain's clock. */
  | { state: 'open'; secondsLeft: number }
  /** Not used, and past its validity by the chain's clock: it can never move money. */
  | { state: 'expired' };

const TOKEN_ABI = EIP3009_TOKEN.abi;

function publicClient(rpcUrl: string) {
  return viem.createPublicClient({ transport: viem.http(rpcUrl, { timeout: 15_000, retryCount: 1 }) });
}

/** The chain's id behind `rpcUrl` (its CAIP-2 network is `eip155:<id>`). */
export async function chainIdOf(rpcUrl: string): Promise<number> {
  return publicClient(rpcUrl).getChainId();
}

/**
 * Reads the authorization's fate. `claimedTx`, a transaction a seller said settled it, is checked first (its receipt
 * must hold the token's AuthorizationUsed for this payer and nonce, and the Transfer of this amount to this payee);
 * whatever it claims, the token's state decides.
 */
export async function readAuthorization(rpcUrl: string, auth: SignedAuthorization, claimedTx?: string): Promise<AuthorizationVerdict> {
  const client = publicClient(rpcUrl);
  const token = viem.getAddress(auth.asset);
  const authorizer = viem.getAddress(auth.payer);
  if (claimedTx && /^0x[0-9a-fA-F]{64}$/.test(claimedTx)) {
    const receipt = await client.getTransactionReceipt({ hash: claimedTx as Hex }).catch(() => undefined);
    if (receipt && receipt.status === 'success' && receiptPays(receipt.logs, token, auth)) return { state: 'settled', txHash: receipt.transactionHash };
  }
  const used = await client.readContract({ address: token, abi: TOKEN_ABI, functionName: 'authorizationState', args: [authorizer, auth.nonce] });
  if (!used) {
    const block = await client.getBlock({ blockTag: 'latest' });
    const secondsLeft = auth.validBefore - Number(block.timestamp);
    return secondsLeft > 0 ? { state: 'open', secondsLeft } : { state: 'expired' };
  }
  const [usedLogs, cancelLogs] = await Promise.all([
    client.getContractEvents({
      address: token,
      abi: TOKEN_ABI,
      eventName: 'AuthorizationUsed',
      args: { authorizer, nonce: auth.nonce },
      fromBlock: 'earliest',
    }),
    client.getContractEvents({
      address: token,
      abi: TOKEN_ABI,
      eventName: 'AuthorizationCanceled',
      args: { authorizer, nonce: auth.nonce },
      fromBlock: 'earliest',
    }),
  ]);
  const transfer = usedLogs[0];
  if (transfer?.transactionHash) return { state: 'settled', txHash: transfer.transactionHash };
  if (cancelLogs[0]) return { state: 'cancelled', txHash: cancelLogs[0].transactionHash ?? undefined };
  // Used, and neither event found (a node that prunes logs): money may have moved, so it counts as spent.
  throw new Error(`the chain says authorization ${auth.nonce} of ${auth.payer} is used but shows neither its transfer nor its cancellation`);
}

interface ReceiptLog {
  address: string;
  topics: readonly Hex[] | Hex[];
  data: Hex;
}

/** Whether a receipt's logs hold this authorization's use and its transfer of exactly the signed amount to the payee. */
function receiptPays(logs: readonly ReceiptLog[], token: string, auth: SignedAuthorization): boolean {
  let usedIt = false;
  let transferred = false;
  for (const log of logs) {
    if (viem.getAddress(log.address) !== token) continue;
    let event;
    try {
      event = viem.decodeEventLog({ abi: TOKEN_ABI, topics: log.topics as [Hex, ...Hex[]], data: log.data });
    } catch {
      continue;
    }
    const args = event.args as Record<string, unknown>;
    if (event.eventName === 'AuthorizationUsed') {
      usedIt ||= sameAddress(args.authorizer, auth.payer) && String(args.nonce).toLowerCase() === auth.nonce.toLowerCase();
    } else if (event.eventName === 'Transfer') {
      transferred ||= sameAddress(args.from, auth.payer) && sameAddress(args.to, auth.payTo) && String(args.value) === auth.amount;
    }
  }
  return usedIt && transferred;
}

const sameAddress = (a: unknown, b: string) => typeof a === 'string' && a.toLowerCase() === b.toLowerCase();

export type CancelOutcome = { sent: true; txHash: Hex } | { sent: false; reason: string };

/**
 * Cancels the authorization on the chain (EIP-3009 `cancelAuthorization`, signed by the payer and sent from its own
 * wallet, which pays the gas), so that no seller can settle it afterwards. `domain` is the EIP-712 domain the
 * authorization was signed under (the terms' `extra.name` / `extra.version`). Not sent when the chain would refuse it
 * (already used or cancelled, or no gas): the caller reads the chain again to learn which.
 */
export function cancelAuthorization(
  rpcUrl: string,
  key: Hex,
  auth: Pick<SignedAuthorization, 'asset' | 'nonce'>,
  domain: { name: string; version: string },
): Promise<CancelOutcome> {
  // One transaction of the wallet at a time from this process: concurrent ones would race for the account's nonce.
  const mine = cancels.then(() => sendCancellation(rpcUrl, key, auth, domain));
  cancels = mine.catch(() => undefined);
  return mine;
}

let cancels: Promise<unknown> = Promise.resolve();

async function sendCancellation(
  rpcUrl: string,
  key: Hex,
  auth: Pick<SignedAuthorization, 'asset' | 'nonce'>,
  domain: { name: string; version: string },
): Promise<CancelOutcome> {
  const account = viemAccounts.privateKeyToAccount(key);
  const transport = viem.http(rpcUrl, { timeout: 15_000, retryCount: 1 });
  const client = viem.createPublicClient({ transport });
  const token = viem.getAddress(auth.asset);
  const chainId = await client.getChainId();
  const signature = await account.signTypedData({
    domain: { name: domain.name, version: domain.version, chainId, verifyingContract: token },
    types: {
      CancelAuthorization: [
        { name: 'authorizer', type: 'address' },
        { name: 'nonce', type: 'bytes32' },
      ],
    },
    primaryType: 'CancelAuthorization',
    message: { authorizer: account.address, nonce: auth.nonce },
  });
  const { r, s, v, yParity } = viem.parseSignature(signature);
  const args = [account.address, auth.nonce, Number(v ?? BigInt(yParity + 27)), r, s] as const;
  let request;
  try {
    ({ request } = await client.simulateContract({ account, address: token, abi: TOKEN_ABI, functionName: 'cancelAuthorization', args }));
  } catch (err) {
    return { sent: false, reason: shortReason(err) };
  }
  const wallet = viem.createWalletClient({
    account,
    transport,
    chain: viem.defineChain({
      id: chainId,
      name: `eip155:${chainId}`,
      nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 },
      rpcUrls: { default: { http: [rpcUrl] } },
    }),
  });
  let hash: Hex;
  try {
    hash = await wallet.writeContract(request);
  } catch (err) {
    // No gas is an answer (the run keeps the reservation until expiry); anything else (a nonce raced by another
    // process of this wallet, the node) is thrown, for the step's retry.
    if (/insufficient funds/i.test(shortReason(err))) return { sent: false, reason: `the wallet cannot pay the gas: ${shortReason(err)}` };
    throw err;
  }
  const receipt = await client.waitForTransactionReceipt({ hash, timeout: 60_000 });
  return receipt.status === 'success' ? { sent: true, txHash: hash } : { sent: false, reason: `the cancellation ${hash} reverted` };
}

/** viem's errors carry a long multi-line message; the first line (or its short form) is what an operator needs. */
function shortReason(err: unknown): string {
  const e = err as { shortMessage?: string; message?: string };
  return (e.shortMessage ?? e.message ?? String(err)).split('\n')[0];
}
