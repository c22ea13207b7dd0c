import { InvalidInputError } from './errors';

/** Who a promotion commit is by: Forge's fixed author and committer identity (the agent's words go in the message). */
export interface CommitIdentity {
  name: string;
  email: string;
}

/** @throws InvalidInputError unless name and email are non-empty and free of `<`, `>` and control characters */
export function assertIdentity(identity: CommitIdentity): void {
  for (const field of ['name', 'email'] as const) {
    const value: unknown = identity?.[field];
    // eslint-disable-next-line no-control-regex
    if (typeof value !== 'string' || value.trim() === '' || /[<>\x00-\x1f\x7f]/u.test(value)) {
      throw new InvalidInputError(`identity.${field}`, value, 'it must be non-empty, without <, > or control characters');
    }
  }
}

/** A commit message as stored: non-empty, no NUL, ending with exactly one newline. @throws InvalidInputError */
export function normaliseMessage(message: unknown): string {
  if (typeof message !== 'string' || message.trim() === '') throw new InvalidInputError('message', message, 'a commit needs a message');
  if (message.includes('\0')) throw new InvalidInputError('message', message, 'it contains a NUL character');
  return `${message.replace(/\s+$/u, '')}\n`;
}

/** Git's raw date (`@<seconds> +0000`) for a moment given as a Date or epoch milliseconds. @throws InvalidInputError */
export function gitDate(date: Date | number): string {
  const ms = date instanceof Date ? date.getTime() : date;
  if (typeof ms !== 'number' || !Number.isFinite(ms) || ms < 0) {
    throw new InvalidInputError('date', String(date), 'it must be a valid time');
  }
  return `@${Math.floor(ms / 1000)} +0000`;
}

/** The environment that makes `git commit-tree` write exactly this author, committer and date. */
export function identityEnv(author: CommitIdentity & { date: string }, committer: CommitIdentity & { date: string } = author): Record<string, string> {
  return {
    GIT_AUTHOR_NAME: author.name,
    GIT_AUTHOR_EMAIL: author.email,
    GIT_AUTHOR_DATE: author.date,
    GIT_COMMITTER_NAME: committer.name,
    GIT_COMMITTER_EMAIL: committer.email,
    GIT_COMMITTER_DATE: committer.date,
  };
}
