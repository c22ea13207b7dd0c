import { randomInt } from 'node:crypto';
import type { SandboxLimits } from './limits';

/** Uids handed to runs of this process that have not ended yet: two runs of one worker never share one. */
const inUse = new Set<number>();
const RANGE = 65_536;

/**
 * A uid of its own for one run's processes, or undefined when runs keep Forge's user: Forge is not root (it could not
 * switch), or `userIdBase` is 0. Picked at random in the range so that workers sharing a host rarely meet (a uid in
 * common would share RLIMIT_NPROC and each other's files, nothing of Forge's). Give it back with {@link releaseRunUser}.
 */
export function takeRunUser(limits: SandboxLimits): number | undefined {
  if (limits.userIdBase === 0 || process.getuid?.() !== 0) return undefined;
  for (let attempt = 0; attempt < 16; attempt++) {
    const uid = limits.userIdBase + randomInt(RANGE);
    if (!inUse.has(uid)) {
      inUse.add(uid);
      return uid;
    }
  }
  throw new Error('no free sandbox uid after 16 tries');
}

export function releaseRunUser(uid: number | undefined): void {
  if (uid !== undefined) inUse.delete(uid);
}
