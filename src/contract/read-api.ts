/*
 * Reads are not runs. `forge tools` and `forge migrations` (ForgeClient.listTools / listMigrations) used to start a
 * `forge-query/...` workflow for every read, which filled the Web UI's list with runs that did nothing. The worker
 * that holds the database answers them over plain HTTP instead: GET only, JSON only, no input, nothing written.
 *
 * Clients find it without any configuration of their own: the control worker's identity, which Temporal reports for
 * each poller of the control queue (DescribeTaskQueue), carries the URL (`... forge-api=http://127.0.0.1:PORT`), so a
 * client reaches the read API of the very platform whose task queue it uses, even with several platforms on one
 * machine. Loopback and an ephemeral port by default: a client on another host, or a read the API cannot answer,
 * falls back to the query workflow.
 */

/** What the worker's identity says after the pid and host: where its read API is. */
const READ_API_IDENTITY_KEY = 'forge-api';

/** The read API's paths (versioned, so an older client of a newer worker still finds what it knows). */
export const READ_API_PATHS = {
  tools: '/v1/tools',
  migrations: '/v1/migrations',
  pnlByTool: '/v1/x402/pnl/tool',
  pnlByDay: '/v1/x402/pnl/day',
  x402: '/v1/x402',
} as const;

export interface ReadApiEndpoint {
  /** `http://host:port`, the address actually bound (the port the kernel chose for `:0`). */
  url: string;
}

/** The worker identity that advertises `api` (Temporal's default identity is `<pid>@<host>`). */
export function identityWithReadApi(base: string, api: ReadApiEndpoint | undefined): string {
  return api ? `${base} ${READ_API_IDENTITY_KEY}=${api.url}` : base;
}

/** The read API URL a worker identity advertises, if any. */
export function readApiOf(identity: string | null | undefined): string | undefined {
  const m = new RegExp(`(?:^|\\s)${READ_API_IDENTITY_KEY}=(https?://\\S+)`).exec(identity ?? '');
  return m?.[1];
}
