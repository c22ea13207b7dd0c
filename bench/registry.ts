import type { Bench } from './types';
import { registryLoad } from './registry-load';
import { deployBench } from './deploy';
import { sandboxBench } from './sandbox';
import { policyCheck } from './policy-check';
import { migrateBench } from './migrate';
import { recoveryBench } from './recovery';
import { promotionWorktreeBench } from './promotion-worktree';
import { promotionBench } from './promotion';
import { reverifyBench } from './reverify';
import { cliBench } from './cli';
import { typecheckBench } from './typecheck';
import { startBench } from './start';
import { coreIndexBench } from './core-index';
import { deployScaleBench } from './deploy-scale';
import { memoryBench } from './memory';
import { soakBench } from './soak';
import { workerStartBench } from './worker-start';

/** Every benchmark, in the order `npm run bench` runs them. Add yours here. */
export const benches: Bench[] = [
  sandboxBench,
  deployBench,
  policyCheck,
  migrateBench,
  registryLoad,
  recoveryBench,
  promotionWorktreeBench,
  promotionBench,
  reverifyBench,
  cliBench,
  typecheckBench,
  startBench,
  coreIndexBench,
  deployScaleBench,
  workerStartBench,
  memoryBench,
  soakBench,
];
