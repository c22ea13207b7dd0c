/**
 * Prices as `forge sell --price` (and ForgeClient.sell) take them: a whole number of the sale asset's base units
 * (`10000`), or money the way x402's official middleware writes it (`$0.01`, `0.01 USD`), which is whole tokens of the
 * sale asset (a USD stablecoin such as USDC: 1 token, 1 dollar) and becomes base units with the token's decimals. The
 * worker converts money, since only it knows the asset; everything here is pure.
 */

import { MAX_BASE_UNITS, POSITIVE_BASE_UNITS_PATTERN } from './base-units';

/** What a price text says: base units as written, or a decimal amount of money still to convert. */
export type PriceNotation = { baseUnits: string } | { money: string };

const DOLLARS = /^\$\s*(\d+(?:\.\d+)?)$/;
const USD_SUFFIX = /^(\d+(?:\.\d+)?)\s*USD$/i;
/** A price, however written, is at most this long (78 digits of base units, and some room for `$` and a point). */
const MAX_PRICE_LENGTH = 100;

/** How to write a price, for error messages. */
const PRICE_HELP =
  'write money as x402 does ($0.01, or 0.01 USD: whole tokens of the sale asset), or a whole number of base units (10000 is $0.01 of a 6-decimals token)';

/** Reads a price text: its notation, or why it is not one (an error message that quotes it). */
export function parsePrice(text: string): PriceNotation | { error: string } {
  const quoted = JSON.stringify(text.length > 40 ? `${text.slice(0, 40)}…` : text);
  const t = text.trim();
  if (t.length > MAX_PRICE_LENGTH) return { error: `the price ${quoted} is too long: ${PRICE_HELP}` };
  if (POSITIVE_BASE_UNITS_PATTERN.test(t)) return { baseUnits: t };
  const money = DOLLARS.exec(t)?.[1] ?? USD_SUFFIX.exec(t)?.[1];
  if (money !== undefined) {
    if (/^0*(\.0*)?$/.test(money)) return { error: `the price ${quoted} is zero: a price is more than 0` };
    return { money };
  }
  if (/^\d*\.\d+$|^\d+\.$/.test(t)) {
    // A bare decimal is money to x402's middleware but base units to Forge: neither is assumed.
    return {
      error: `the price ${quoted} is ambiguous: write $${t.startsWith('.') ? `0${t}` : t.replace(/\.$/, '')} for that much of the token, or a whole number of base units`,
    };
  }
  if (/^0+$/.test(t)) return { error: `the price ${quoted} is zero: a price is more than 0` };
  return { error: `the price ${quoted} is not a price: ${PRICE_HELP}` };
}

/**
 * Money (a decimal amount of whole tokens, as `parsePrice` returns it) in base units of a token of `decimals`, or why
 * it cannot be: a price finer than one base unit is refused, never rounded.
 */
export function moneyToBaseUnits(money: string, decimals: number): { baseUnits: string } | { error: string } {
  const [whole, fraction = ''] = money.split('.');
  const significant = fraction.replace(/0+$/, '');
  if (significant.length > decimals) {
    return {
      error:
        `the price $${money} is finer than the sale asset's ${decimals} decimals allow: its smallest step is ` +
        `$${formatBaseUnits(1n, decimals)} (1 base unit); round it, or give a whole number of base units`,
    };
  }
  const units = BigInt(whole) * 10n ** BigInt(decimals) + BigInt(significant.padEnd(decimals, '0') || '0');
  if (units === 0n) return { error: `the price $${money} is zero: a price is more than 0` };
  if (units > MAX_BASE_UNITS) return { error: `the price $${money} is more base units than a token amount can hold (78 digits)` };
  return { baseUnits: units.toString() };
}

/** Base units as whole tokens: 10000 with 6 decimals is `0.01`, 1000000 is `1`. */
export function formatBaseUnits(amount: bigint, decimals: number): string {
  const scale = 10n ** BigInt(decimals);
  const whole = amount / scale;
  const fraction = (amount % scale).toString().padStart(decimals, '0').replace(/0+$/, '');
  return fraction ? `${whole}.${fraction}` : `${whole}`;
}
