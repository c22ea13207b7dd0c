import { hostilePromotionCases } from './promotion-cases';
import { describeIf } from '../helpers/skip';

/*
 * Issue 24's hostile corpus from a promotion stage's test (the agent repository's own code), with `forge up` run by
 * root: the stage's commands must reach nothing of the platform's either.
 */
const root = process.getuid?.() === 0;

// Root is the case CI runs (.ci/run is root); a non-root checkout cannot start it, and its own user's case is
// promotion-as-ordinary-user.test.ts.
describeIf(root, "needs root (the ordinary user's case is promotion-as-ordinary-user.test.ts)")('a hostile promotion, Forge run by root', () => {
  hostilePromotionCases('root');
});
