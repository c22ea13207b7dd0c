import { createHash, timingSafeEqual } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { homeSecret } from './home-secret';

/*
 * The read API answers only Forge's own clients (TOOL_CONTRACT.md, "What a tool can reach": a tool that found it on
 * loopback read the x402 wallet and the local chain from it). They prove it with a bearer token: FORGE_API_TOKEN where
 * it is set, else a random one the first worker on a FORGE_HOME writes to `$FORGE_HOME/read-api.token` (0600) and every
 * later worker on that home reuses, so that two workers sharing a home, or a worker restarted after a crash, answer the
 * same clients. A client on the same host, as the same user, reads the file; any other sets FORGE_API_TOKEN, or reads
 * through a query workflow (Temporal's own authentication) as it does when it cannot reach the read API at all.
 * Delete the file to change the token (the workers read it at start).
 */

/** The file under FORGE_HOME that holds the read API's token. */
const READ_API_TOKEN_FILE = 'read-api.token';

/** What a token in that file looks like (ours are 43 base64url characters; FORGE_API_TOKEN's rule is the config's). */
const TOKEN = /^[\x21-\x7e]{16,}$/;

export const readApiTokenFileOf = (home: string) => path.join(home, READ_API_TOKEN_FILE);

/**
 * The token the workers of `home` ask for: `configured` (FORGE_API_TOKEN) when set; else the one in the home's token
 * file; else a new one, created there private and exclusively (a hard link of a complete temp file, so a worker
 * starting at the same moment finds the same token, never half of one).
 */
export async function workerReadApiToken(home: string, configured: string | undefined): Promise<string> {
  if (configured !== undefined) return configured;
  return homeSecret(readApiTokenFileOf(home));
}

/**
 * The token a client presents to the read API of the platform whose FORGE_HOME is `home`: `configured`
 * (FORGE_API_TOKEN) when set, else the home's token file when this user can read it, else undefined (the client then
 * reads through a query workflow). Read at each use: cheap, and a worker may have made it after the client started.
 */
export function clientReadApiToken(home: string, configured: string | undefined): string | undefined {
  if (configured !== undefined) return configured;
  try {
    const token = readFileSync(readApiTokenFileOf(home), 'utf8').trim();
    return TOKEN.test(token) ? token : undefined;
  } catch {
    return undefined;
  }
}

/** What the read API keeps of its token: its digest, the form {@link presentsToken} compares. */
export function tokenDigest(token: string): Buffer {
  return createHash('sha256').update(token, 'utf8').digest();
}

/**
 * Whether an Authorization header carries the token whose digest is `expected`. The digests are compared in constant
 * time (timingSafeEqual on equal-length digests), so neither a guess's length nor how much of it was right shows in how
 * long the answer takes.
 */
export function presentsToken(authorization: string | undefined, expected: Buffer): boolean {
  const match = /^Bearer\s+(\S+)\s*$/i.exec(authorization ?? '');
  // A request without a token still pays for one comparison: the answer takes as long either way.
  const presented = tokenDigest(match?.[1] ?? '');
  return timingSafeEqual(presented, expected) && match !== null;
}
