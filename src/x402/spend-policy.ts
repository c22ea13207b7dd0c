import { isBaseUnits } from '../contract/base-units';
import { CALLER_MAXIMUM_NOTE, MAX_AUTHORIZATION_SECONDS, type SpendLimit, type X402PaymentRequirements } from '../contract/pay-runs';

/**
 * What the agent may spend, checked before anything is signed. Amounts are base units of the asset; the per-payment
 * maximum applies to every allowed asset alike, which is why assets are an allow-list (a maximum in base units means
 * something only for assets of known decimals). The rolling daily budget is the ledger's (an atomic reservation).
 */
export interface SpendPolicy {
  maxPerPayment: bigint;
  dailyBudget: bigint;
  /** Lower-case addresses; empty: any payee. */
  allowedPayees: string[];
  /** CAIP-2 networks (`eip155:8453`); empty: the configured chain's only (paying checks it is among these too). */
  allowedNetworks: string[];
  /** Lower-case token addresses; empty: none (paying needs an asset an operator named). */
  allowedAssets: string[];
}

export type PolicyVerdict =
  { ok: true; requirement: X402PaymentRequirements; amount: bigint } | { ok: false; limit: SpendLimit; reason: string; requirement?: X402PaymentRequirements };

/** The one scheme Forge pays with: x402's `exact` on EVM chains (EIP-3009 transferWithAuthorization). */
const PAYABLE_SCHEME = 'exact';
const EVM_NETWORK = /^eip155:\d+$/;

/** Why `requirement` may not be paid under `policy` and `cap`, or undefined when it may. */
function refusalOf(requirement: X402PaymentRequirements, policy: SpendPolicy, cap: bigint): { limit: SpendLimit; reason: string } | undefined {
  const { scheme, network, asset, payTo, amount } = requirement;
  if (scheme !== PAYABLE_SCHEME || !EVM_NETWORK.test(network)) {
    return { limit: 'scheme', reason: `the resource asks for scheme "${scheme}" on ${network}; Forge pays with "exact" on eip155 networks` };
  }
  if (policy.allowedNetworks.length > 0 && !policy.allowedNetworks.includes(network)) {
    return { limit: 'network', reason: `network ${network} is not allowed (FORGE_X402_ALLOWED_NETWORKS: ${policy.allowedNetworks.join(', ')})` };
  }
  if (!policy.allowedAssets.includes(asset.toLowerCase())) {
    return {
      limit: 'asset',
      reason:
        policy.allowedAssets.length === 0
          ? `asset ${asset} is not allowed: no asset is (set FORGE_X402_ALLOWED_ASSETS to the token addresses the agent may pay with)`
          : `asset ${asset} is not allowed (FORGE_X402_ALLOWED_ASSETS: ${policy.allowedAssets.join(', ')})`,
    };
  }
  if (policy.allowedPayees.length > 0 && !policy.allowedPayees.includes(payTo.toLowerCase())) {
    return { limit: 'payee', reason: `payee ${payTo} is not allowed (FORGE_X402_ALLOWED_PAYEES)` };
  }
  if (!(requirement.maxTimeoutSeconds > 0 && requirement.maxTimeoutSeconds <= MAX_AUTHORIZATION_SECONDS)) {
    // A signed authorization stays valid this long; reconciliation relies on its expiry to tell unpaid from lost.
    return {
      limit: 'scheme',
      reason: `the resource asks for an authorization valid ${requirement.maxTimeoutSeconds} s; Forge signs for at most ${MAX_AUTHORIZATION_SECONDS} s`,
    };
  }
  const transfer = requirement.extra?.assetTransferMethod;
  if (transfer !== undefined && transfer !== 'eip3009') {
    // Forge's settlement check and its cancellation are EIP-3009's: a Permit2 payment could be neither read nor cancelled.
    return {
      limit: 'scheme',
      reason: `the resource asks for extra.assetTransferMethod ${JSON.stringify(transfer)}; Forge pays only with EIP-3009 authorizations ("eip3009")`,
    };
  }
  if (!isBaseUnits(amount)) return { limit: 'scheme', reason: `the resource asks for an amount that is not a whole number of base units: "${amount}"` };
  if (BigInt(amount) > cap) {
    return { limit: 'maxPerPayment', reason: `the price ${amount} is over the per-payment maximum ${cap}` };
  }
  return undefined;
}

/**
 * Picks the first of the resource's payment options the policy allows, capped at the configured per-payment maximum
 * and, lower still, the caller's `maxAmount`. A refusal names the limit that excluded the first option (the one the
 * resource prefers), with its amounts.
 */
export function choosePayment(accepts: X402PaymentRequirements[], policy: SpendPolicy, maxAmount?: bigint): PolicyVerdict {
  const cap = maxAmount !== undefined && maxAmount < policy.maxPerPayment ? maxAmount : policy.maxPerPayment;
  if (accepts.length === 0) return { ok: false, limit: 'scheme', reason: 'the resource answered 402 with no payment option' };
  let first: { limit: SpendLimit; reason: string; requirement: X402PaymentRequirements } | undefined;
  for (const requirement of accepts) {
    const refusal = refusalOf(requirement, policy, cap);
    if (!refusal) return { ok: true, requirement, amount: BigInt(requirement.amount) };
    first ??= { ...refusal, requirement };
  }
  const why = first as NonNullable<typeof first>;
  const more = accepts.length > 1 ? ` (and none of its ${accepts.length - 1} other option(s) is allowed)` : '';
  // Said in the caller's terms by the caller (the CLI names its --max flag); the policy only says where the cap came from.
  const capNote = why.limit === 'maxPerPayment' && cap < policy.maxPerPayment ? ` ${CALLER_MAXIMUM_NOTE} (the configured one is ${policy.maxPerPayment})` : '';
  return { ok: false, limit: why.limit, requirement: why.requirement, reason: `${why.reason}${capNote}${more}` };
}
