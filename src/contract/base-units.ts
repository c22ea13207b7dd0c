/**
 * Amounts of an asset as Forge carries them everywhere (x402's terms, the ledger, spend limits, `forge pay --max`): a
 * decimal string of whole base units (10^-decimals of a token), at most 78 digits (a uint256, and the ledger's
 * numeric(78,0)). The one place the rule is written: src/contract/inputs.ts makes it a zod schema, and the CLI, the
 * spend policy and the ledger test text with `isBaseUnits`. No zod here, so the CLI can load it before a command runs.
 */

/** A whole number of base units, zero included: 1 to 78 decimal digits. */
export const BASE_UNITS_PATTERN = /^\d{1,78}$/;

/** A whole number of base units above zero, written without leading zeros (a price). */
export const POSITIVE_BASE_UNITS_PATTERN = /^[1-9]\d{0,77}$/;

/** The largest amount a base-units string can hold (78 digits). */
export const MAX_BASE_UNITS = 10n ** 78n - 1n;

/** How to write an amount, for error messages. */
export const BASE_UNITS_HELP = 'a whole number of base units (1000000 is 1.00 of a 6-decimals token)';

/** Whether `value` is a decimal string of base units (BASE_UNITS_PATTERN). */
export function isBaseUnits(value: unknown): value is string {
  return typeof value === 'string' && BASE_UNITS_PATTERN.test(value);
}
