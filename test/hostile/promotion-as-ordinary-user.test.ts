import { userInfo } from 'node:os';
import { ORDINARY_USER } from './platform';
import { hostilePromotionCases } from './promotion-cases';

/*
 * Issue 24's hostile corpus from a promotion stage's test, with `forge up` run by an ordinary user (`forgeuser`,
 * created when missing; or this process's own user when it is not root).
 */
const user = process.getuid?.() === 0 ? ORDINARY_USER : userInfo().username;

describe(`a hostile promotion, Forge run by ${user}`, () => {
  hostilePromotionCases(user);
});
