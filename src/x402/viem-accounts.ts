/**
 * viem's accounts entry alone (secp256k1 and keccak): what a worker needs at its start to know its wallet's address.
 * It loads in ~70 ms where all of viem (viem.ts) takes ~215 ms (measured 2026-11-29), and a worker with a wallet
 * derives its address before it polls; the rest of viem loads at the first payment. Loaded as viem.ts says why.
 */
import type * as ViemAccounts from 'viem/accounts' with { 'resolution-mode': 'import' };

// eslint-disable-next-line @typescript-eslint/no-require-imports
export const viemAccounts: typeof ViemAccounts = require('viem/accounts');
