import { hostilePromotionCases } from './promotion-cases';

/*
 * Issue 24's hostile corpus from a promotion stage's test (the agent repository's own code), with `forge up` run by
 * root: the stage's commands must reach nothing of the platform's either.
 */
const root = process.getuid?.() === 0;

// Root is the case CI runs (.ci/run is root); a non-root checkout cannot start it, and its own user's case is
// promotion-as-ordinary-user.test.ts.
(root ? describe : describe.skip)('a hostile promotion, Forge run by root', () => {
  hostilePromotionCases('root');
});
