import { x402Client, x402HTTPClient } from '@x402/core/client';
import type { PaymentRequired } from '@x402/core/types';
import { ExactEvmScheme } from '@x402/evm/exact/client';
import {
  MAX_PAID_BODY_BYTES,
  PAY_AUTHORIZATION_SECONDS,
  type PaidResponse,
  type PaymentProbe,
  type PayRequest,
  type X402PaymentRequired,
  type X402PaymentRequirements,
} from '../contract/pay-runs';
import { EIP3009_TOKEN } from './contracts/artifacts';
import { viem, viemAccounts, type Hex } from './viem';
import { PaymentRequestError } from './errors';

/**
 * The buyer's side of one x402 payment, in steps a workflow can retry one by one: ask for the terms, sign once, send
 * the signed payload (as often as it takes: the same payload can settle at most once, its EIP-3009 nonce sees to
 * that), and ask the chain whether it settled. Everything x402 defines (the headers, the EIP-712 payload, the
 * settlement response) is done by the official packages; this module only cuts the flow where the workflow needs it.
 */

/** How long one HTTP exchange with the resource may take. */
const REQUEST_TIMEOUT_MS = 30_000;

/**
 * Reads the response, its body only up to MAX_PAID_BODY_BYTES: the rest is never read (the stream is cancelled), so a
 * seller's endless body costs a bounded buffer, not the worker's memory.
 */
async function readResponse(response: Response): Promise<PaidResponse> {
  const headers: Record<string, string> = {};
  response.headers.forEach((value, name) => (headers[name.toLowerCase()] = value));
  const chunks: Uint8Array[] = [];
  let length = 0;
  let bodyTruncated = false;
  const reader = response.body?.getReader();
  if (reader) {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      chunks.push(value);
      length += value.byteLength;
      if (length > MAX_PAID_BODY_BYTES) {
        bodyTruncated = true;
        await reader.cancel().catch(() => undefined);
        break;
      }
    }
  }
  const bytes = Buffer.concat(chunks);
  return {
    httpStatus: response.status,
    headers,
    body: (bodyTruncated ? bytes.subarray(0, MAX_PAID_BODY_BYTES) : bytes).toString('utf8'),
    bodyTruncated,
  };
}

async function send(request: PayRequest, extraHeaders: Record<string, string> = {}): Promise<PaidResponse> {
  try {
    const response = await fetch(request.url, {
      method: request.method ?? 'GET',
      headers: { ...request.headers, ...extraHeaders },
      body: request.body,
      signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
      redirect: 'manual',
    });
    return await readResponse(response);
  } catch (err) {
    throw new PaymentRequestError(`${request.method ?? 'GET'} ${request.url} failed: ${(err as Error).message}`, { cause: err });
  }
}

function getHeaderOf(response: PaidResponse): (name: string) => string | undefined {
  return (name) => response.headers[name.toLowerCase()];
}

/** An x402 HTTP client that only reads (decoding needs no signer). */
const reader = new x402HTTPClient(new x402Client());

/**
 * Sends the request unpaid. A 402 gives the resource's payment terms (x402 v2's PAYMENT-REQUIRED header, or v1's
 * body); any other answer is the response itself (the resource asked for no payment).
 * @throws PaymentRequestError when the resource cannot be reached, or its 402 carries no terms x402 can read.
 */
export async function probePayment(request: PayRequest): Promise<PaymentProbe> {
  const response = await send(request);
  if (response.httpStatus !== 402) return { kind: 'response', response };
  let body: unknown;
  try {
    body = response.body ? JSON.parse(response.body) : undefined;
  } catch {
    body = undefined;
  }
  try {
    const paymentRequired = reader.getPaymentRequiredResponse(getHeaderOf(response), body);
    return { kind: 'paymentRequired', paymentRequired: paymentRequired as X402PaymentRequired };
  } catch (err) {
    throw new PaymentRequestError(`${request.url} answered 402 without payment terms x402 can read: ${(err as Error).message}`, { cause: err });
  }
}

export interface SignedPayment {
  /** The headers that carry the payment (PAYMENT-SIGNATURE for v2), sent with the request on every try. */
  headers: Record<string, string>;
  /** The EIP-3009 authorization's nonce: what makes the payment settle at most once. */
  nonce: Hex;
  /** The paying address. */
  payer: string;
  /** The authorization's last valid second (unix): after it the payload can never settle. */
  validBefore: number;
}

/**
 * Signs the payment of `requirement` (one of `paymentRequired.accepts`) with the wallet `key`, through the official
 * client: @x402/evm's `exact` scheme makes the EIP-3009 authorization. The client's own spend controls allow exactly
 * this asset up to exactly this amount, and its before-creation hook refuses any other option: whatever the client
 * would select, it signs only what the spend policy approved.
 */
export async function signPayment(key: Hex, paymentRequired: X402PaymentRequired, requirement: X402PaymentRequirements): Promise<SignedPayment> {
  const account = viemAccounts.privateKeyToAccount(key);
  const client = new x402Client()
    .register(requirement.network as `${string}:${string}`, new ShortLivedExactEvmScheme(account))
    .setSpendControls({
      allowedAssets: [{ network: requirement.network as `${string}:${string}`, asset: requirement.asset, maxAmountPerPayment: requirement.amount }],
    })
    .onBeforePaymentCreation(async ({ selectedRequirements: s }) => {
      const same =
        s.scheme === requirement.scheme &&
        s.network === requirement.network &&
        s.asset === requirement.asset &&
        s.amount === requirement.amount &&
        s.payTo === requirement.payTo;
      return same ? undefined : { abort: true as const, reason: 'the client selected another payment option than the one the spend policy approved' };
    });
  const http = new x402HTTPClient(client);
  const payload = await http.createPaymentPayload({ ...paymentRequired, accepts: [requirement] } as PaymentRequired);
  const authorization = (payload.payload as { authorization?: { nonce?: Hex; from?: string; validBefore?: string } }).authorization;
  if (!authorization?.nonce || !authorization.from) {
    throw new Error('the exact scheme made a payload without an EIP-3009 authorization (nonce, from)');
  }
  return {
    headers: http.encodePaymentSignatureHeader(payload),
    nonce: authorization.nonce,
    payer: authorization.from,
    validBefore: Number(authorization.validBefore ?? 0),
  };
}

/**
 * The official exact scheme, signing authorizations valid for at most PAY_AUTHORIZATION_SECONDS however long the terms
 * allow: a signed authorization is money in flight until it is used, cancelled or expired, so it lives only as long as
 * the request needs. Only the scheme's copy of the terms is shortened; the payload's `accepted` stays the seller's own
 * (x402Client sets it), so the seller still finds its requirements.
 */
class ShortLivedExactEvmScheme extends ExactEvmScheme {
  override createPaymentPayload(...[version, requirements, context]: Parameters<ExactEvmScheme['createPaymentPayload']>) {
    return super.createPaymentPayload(
      version,
      { ...requirements, maxTimeoutSeconds: Math.min(requirements.maxTimeoutSeconds, PAY_AUTHORIZATION_SECONDS) },
      context,
    );
  }
}

/** The response to the paid request and, when the resource settled it, x402's settlement response. */
export interface PaidExchange {
  response: PaidResponse;
  settlement?: { success: boolean; transaction?: string; network?: string; payer?: string; errorReason?: string };
}

/**
 * Sends the request with the signed payment. Safe to repeat: a payload already settled cannot settle again (the
 * token refuses a used nonce), so a retry after a lost answer costs nothing; the chain says whether it paid.
 * @throws PaymentRequestError when the resource cannot be reached.
 */
export async function sendPaidRequest(request: PayRequest, payment: Pick<SignedPayment, 'headers'>): Promise<PaidExchange> {
  const response = await send(request, payment.headers);
  let settlement: PaidExchange['settlement'];
  if (response.headers['payment-response'] !== undefined) {
    try {
      settlement = reader.getPaymentSettleResponse(getHeaderOf(response));
    } catch {
      settlement = undefined;
    }
  }
  return { response, settlement };
}

/**
 * Whether the chain used `payer`'s authorization `nonce` on the token `asset` (the payment settled), and the
 * transaction that did, from the token's AuthorizationUsed event. The chain is the truth a lost response cannot hide.
 * Read through the shipped token's ABI: `authorizationState` and `AuthorizationUsed` are EIP-3009's, as on USDC.
 */
export async function authorizationOnChain(rpcUrl: string, asset: string, payer: string, nonce: Hex): Promise<{ used: boolean; txHash?: string }> {
  const client = viem.createPublicClient({ transport: viem.http(rpcUrl) });
  const token = viem.getAddress(asset);
  const authorizer = viem.getAddress(payer);
  const used = await client.readContract({ address: token, abi: EIP3009_TOKEN.abi, functionName: 'authorizationState', args: [authorizer, nonce] });
  if (!used) return { used: false };
  const logs = await client.getContractEvents({
    address: token,
    abi: EIP3009_TOKEN.abi,
    eventName: 'AuthorizationUsed',
    args: { authorizer, nonce },
    fromBlock: 'earliest',
  });
  // A canceled authorization is "used" too, but moved nothing: only the transfer's event proves a payment.
  const transfer = logs[0];
  return transfer ? { used: true, txHash: transfer.transactionHash ?? undefined } : { used: false };
}
