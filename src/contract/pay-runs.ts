/**
 * Inputs and results of PayWorkflow (CLI.md `forge pay`): plain JSON shared by the client, the activities and the
 * workflow. Amounts are decimal strings of the asset's base units (10^-decimals), as x402's payment requirements
 * carry them: a bigint does not survive JSON, and a float would round money.
 */

/** The HTTP request to pay for. */
export interface PayRequest {
  url: string;
  /** Default GET. */
  method?: string;
  headers?: Record<string, string>;
  /** The request body, as sent (e.g. JSON text). */
  body?: string;
}

export interface PayInput extends PayRequest {
  /** The most this one payment may cost, in base units; lowers (never raises) the configured per-payment maximum. */
  maxAmount?: string;
  /** The caller's key for this payment: the run's ID is derived from it, so a retried pay joins the first run. */
  idempotencyKey?: string;
}

/**
 * How long a pay run waits, after the seller answered without a settlement the chain can see, for one to show before
 * it cancels the authorization: a seller's settlement is normally mined before it answers, so this only covers an RPC
 * node a block behind the seller's.
 */
export const SETTLEMENT_GRACE_SECONDS = 8;

/** How long a pay run keeps asking a chain that cannot be read before it reports `pending`. */
export const CHAIN_PATIENCE_SECONDS = 60;

/**
 * What a `maxPerPayment` refusal's reason says when the caller's own maximum (PayInput.maxAmount), not the configured
 * one, refused it: each caller names its own way of setting it (the CLI its --max flag).
 */
export const CALLER_MAXIMUM_NOTE = 'set for this payment';

/** The spend-policy limits a payment can be refused by (each named in the refusal with its amounts). */
export type SpendLimit = 'maxPerPayment' | 'dailyBudget' | 'payee' | 'network' | 'asset' | 'scheme' | 'wallet';

/**
 * `paid`: the chain shows the payment settled (or the resource asked for none: amount "0"); the response is what came
 * back. `failed`: the chain shows it can never settle (cancelled by Forge, or expired unused): nothing was paid.
 * `pending`: the chain could not say yet (unreachable, or the cancellation could not be sent): the amount stays
 * reserved against the budget until reconciliation decides it from the chain, at the latest when it expires.
 */
type PayStatus = 'paid' | 'refused' | 'failed' | 'pending';

/**
 * The signal by which PayWorkflow's send step hands a settled answer to its run before returning: if the worker dies
 * before Temporal records the step, the retry's send is refused (the payload is used) and the run still has the answer.
 */
export const PAID_ANSWER_SIGNAL = 'forgePaidAnswer';

export interface PayResult {
  status: PayStatus;
  workflowId: string;
  /** The resource's HTTP status, when a response came back. */
  httpStatus?: number;
  /** The resource's response headers (lower-case names), when a response came back. */
  headers?: Record<string, string>;
  /** The resource's response body as text (bounded: see `bodyTruncated`). */
  body?: string;
  bodyTruncated?: boolean;
  /** What was paid (or would have been, for a refusal): base units of `asset` on `network` to `payTo`. */
  amount?: string;
  asset?: string;
  network?: string;
  payTo?: string;
  /** The settlement transaction on the chain. */
  txHash?: string;
  /** For a refusal: the limit that refused it. */
  limit?: SpendLimit;
  /** Why it was refused or failed, or what an operator should know about a payment (e.g. its response was lost). */
  reason?: string;
  /** The key the run's ID was derived from: pay again with it to join this run instead of paying twice. */
  idempotencyKey?: string;
}

/** The resource's answer to the unpaid request: the terms, or (no payment asked) the response itself. */
export type PaymentProbe = { kind: 'paymentRequired'; paymentRequired: X402PaymentRequired } | { kind: 'response'; response: PaidResponse };

/** An HTTP response as the workflow carries it. */
export interface PaidResponse {
  httpStatus: number;
  headers: Record<string, string>;
  body: string;
  bodyTruncated: boolean;
}

/**
 * x402's `PaymentRequired` (v2) as plain JSON: declared here, not imported, so the contract stays free of the x402
 * packages (and their zod 3) for every layer that imports it.
 */
export interface X402PaymentRequired {
  x402Version: number;
  error?: string;
  resource: { url: string; description?: string; mimeType?: string };
  accepts: X402PaymentRequirements[];
  extensions?: Record<string, unknown>;
}

export interface X402PaymentRequirements {
  scheme: string;
  network: string;
  asset: string;
  amount: string;
  payTo: string;
  maxTimeoutSeconds: number;
  extra: Record<string, unknown>;
}

/** The longest validity a payment authorization may ask for, paying or selling (x402's default is 300 s). */
export const MAX_AUTHORIZATION_SECONDS = 30 * 60;

/**
 * How long an authorization Forge signs stays valid, whatever the terms allow (up to MAX_AUTHORIZATION_SECONDS): enough
 * for the paid request (four tries of 30 s) and short enough that a payment given up on is dead soon even uncancelled.
 */
export const PAY_AUTHORIZATION_SECONDS = 150;

/** Where a worker's seller serves each tool it sells: `<seller url>/tools/<name>`. */
export const TOOL_ROUTE_PREFIX = '/tools/';

/** The largest response body a pay run returns (the rest is cut, `bodyTruncated` set): it travels in history. */
export const MAX_PAID_BODY_BYTES = 256 * 1024;

/** The kinds of run PayWorkflow's ID starts with. */
export const PAY_WORKFLOW_PREFIX = 'pay/';

/** `forge pnl`: settled income, spend and net (decimal strings of base units), by tool or by UTC day. */
export interface PnlResult {
  by: 'tool' | 'day';
  rows: Array<{ key: string; asset: string; network: string; income: string; spend: string; net: string }>;
  /** The sum of the rows: money only when `assets` has one entry. */
  totals: { income: string; spend: string; net: string };
  assets: Array<{ asset: string; network: string }>;
}

/** `forge sell TOOL --price AMOUNT` (or `--stop`): offer an active tool as a paid endpoint, or withdraw it. */
export interface SellInput {
  tool: string;
  /**
   * The price per call: a whole number of base units of the sale asset (`10000`), or money as x402 writes it (`$0.01`,
   * `0.01 USD`: whole tokens, converted with the asset's decimals by the worker; src/contract/price.ts). Absent with
   * `stop`.
   */
  price?: string;
  /** Withdraw the offer. */
  stop?: boolean;
  /** What buyers read (default: the tool's own description). */
  description?: string;
}

export interface SellResult {
  status: 'offered' | 'withdrawn' | 'refused';
  tool: string;
  workflowId: string;
  /** Where the tool is sold: POST a JSON body (its input) there, with an x402 payment. */
  url?: string;
  /** The price per call in base units of `asset`, however it was given. */
  price?: string;
  /** The price as it was given, when it was money (`$0.01`): `price` is what it came to. */
  priceGiven?: string;
  /** The sale asset's decimals: `price` / 10^decimals whole tokens. */
  decimals?: number;
  /** `price` in whole tokens (`0.01`): dollars for a USD stablecoin. */
  priceInTokens?: string;
  asset?: string;
  network?: string;
  payTo?: string;
  reason?: string;
  /** Set on a refusal of the input itself (`price`: money finer than the asset's decimals): bad input, not a verdict. */
  problem?: 'price';
  /** Sold, with something to say (e.g. its input schema could not be published as it is). */
  warnings?: string[];
}

/** What a worker says of its x402 side (the read API's /v1/x402): where to discover, where it sells. */
export interface X402Info {
  /** The wallet's address (never its key). */
  wallet?: string;
  /** The facilitator sales settle through and discovery asks. */
  facilitatorUrl?: string;
  seller?: { url: string; asset: string; network: string; payTo: string };
  /** Why this worker does not sell. */
  sellingOff?: string;
  /** FORGE_X402_DEV: the local network this worker runs. */
  devNetwork?: { rpcUrl: string; chainId: number; token: string };
}

/** `forge services`: services offered over x402, as the facilitator's discovery lists them. */
export interface ServicesResult {
  facilitatorUrl: string;
  services: Array<{
    url: string;
    method?: string;
    description?: string;
    price?: string;
    asset?: string;
    network?: string;
    payTo?: string;
    inputSchema?: unknown;
  }>;
}
