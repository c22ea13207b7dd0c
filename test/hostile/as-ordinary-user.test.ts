import { userInfo } from 'node:os';
import { hostileCorpusCases } from './cases';
import { ORDINARY_USER } from './platform';

/*
 * Issue 24's hostile corpus against `forge up` run by an ordinary user (`forgeuser`, created when missing; or this
 * process's own user when it is not root), where the sandbox cannot give runs a user of their own.
 */
const user = process.getuid?.() === 0 ? ORDINARY_USER : userInfo().username;

describe(`the hostile corpus, Forge run by ${user}`, () => {
  hostileCorpusCases(user);
});
