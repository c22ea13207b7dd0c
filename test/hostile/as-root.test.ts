import { hostileCorpusCases } from './cases';
import { describeIf } from '../helpers/skip';

/*
 * Issue 24's hostile corpus against `forge up` run by root (this machine's and CI's default): each hostile tool as a
 * deployment's test run and through `forge call`, asserting from outside that it reached nothing of the platform's.
 */
const root = process.getuid?.() === 0;

// Forge as root is the case CI runs (.ci/run is root); a non-root checkout cannot start it, and its own user's case
// is as-ordinary-user.test.ts.
describeIf(root, "needs root (the ordinary user's case is as-ordinary-user.test.ts)")('the hostile corpus, Forge run by root', () => {
  hostileCorpusCases('root');
});
