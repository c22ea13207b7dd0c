import type { Bench } from './types';

/** Every benchmark, in the order `npm run bench` runs them. Add yours here. */
export const benches: Bench[] = [];
