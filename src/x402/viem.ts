/**
 * The one place Forge loads viem. viem ships CommonJS code (its `default` export condition) but declares its types as
 * ES modules (`_types/package.json` says `"type": "module"`), and Forge compiles to CommonJS (`module: node16`), so
 * TypeScript refuses a plain value import (TS1479) and needs `resolution-mode` on type imports (TS1541). Here the
 * CommonJS build is required, as Node would load it for `require('viem')` (and as @x402/evm loads it: one copy), and
 * typed with viem's own declarations; the rest of src/x402 imports viem from this module.
 */
import type * as ViemModule from 'viem' with { 'resolution-mode': 'import' };

export type { Account, Address, Chain, Hash, Hex, PrivateKeyAccount, Transport, WalletClient } from 'viem' with {
  'resolution-mode': 'import',
};

// eslint-disable-next-line @typescript-eslint/no-require-imports
export const viem: typeof ViemModule = require('viem');
export { viemAccounts } from './viem-accounts';
