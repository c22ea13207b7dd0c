/**
 * What a run may reach over the network (TOOL_CONTRACT.md, "What a tool can reach"): every run gets a network namespace
 * of its own, so the host's loopback (the Temporal frontend, the read API, the database, the local chain) is simply
 * not there; what it may reach beyond it is the operator's policy:
 * - `internet` (the default, a locked product decision): any public destination. User-mode networking (slirp4netns,
 *   with its own gateway to the host's loopback disabled) carries the run's connections out through the host's
 *   sockets, and the run's routing table makes every address that is not public unreachable before a packet leaves
 *   the namespace: loopback, private, shared, link-local (the cloud metadata address), benchmark, multicast and
 *   reserved ranges, and each of the host's own addresses. IPv6 has no route at all.
 * - `none`: the namespace has its loopback only.
 * - an allowlist, `host[:port],...`: the hosts' addresses (resolved when the run's process starts) on those ports, and
 *   nothing else; never one of the addresses above, whatever a name resolves to.
 * The rules live in the namespace, set up before the run's code starts and out of its reach: the run has no
 * capability over its namespace (see filesystem-view.ts).
 */
import { isIP } from 'node:net';
import { lookup } from 'node:dns/promises';
import { networkInterfaces } from 'node:os';
import type { NetworkPolicy } from '../contract/network-policy';
import { isNeverReachable, NEVER_REACHABLE_V4 } from '../contract/never-reachable';

export { INTERNET, describeNetworkPolicy, type NetworkPolicy } from '../contract/network-policy';

/** The ranges no run ever reaches, whatever the policy: one list, shared with the dev facilitator (src/contract). */
/** slirp4netns's fixed layout inside the namespace (its defaults). */
export const SLIRP = { device: 'tap0', cidr: '10.0.2.0/24', gateway: '10.0.2.2', dns: '10.0.2.3', address: '10.0.2.100' } as const;

/** What the launcher sets up for one run's namespace: resolved, so that nothing is looked up inside it. */
export interface NetworkPlan {
  /** `none`: loopback only; `slirp`: user-mode networking with the routes below. */
  kind: 'none' | 'slirp';
  /** `ip -batch` lines run in the namespace before the run's code starts. */
  routes: string;
  /** An nftables ruleset loaded in the namespace (allowlists only; empty otherwise). */
  nft: string;
}

/** The host's own IPv4 addresses outside {@link NEVER_REACHABLE_V4} (a public address of this machine). */
function hostPublicAddresses(): string[] {
  const found = new Set<string>();
  for (const list of Object.values(networkInterfaces())) {
    for (const info of list ?? []) {
      if (info.family === 'IPv4' && !isNeverReachable(info.address)) found.add(info.address);
    }
  }
  return [...found];
}

/**
 * The plan for one run under `policy`: the deny routes (and the host's own public addresses), and for an allowlist
 * the hosts' addresses resolved now. A name that resolves only to addresses no run may reach is left out (said in
 * `skipped`), never allowed.
 */
export async function planNetwork(policy: NetworkPolicy): Promise<NetworkPlan & { skipped: string[] }> {
  if (policy.kind === 'none') return { kind: 'none', routes: '', nft: '', skipped: [] };
  const denied = [...NEVER_REACHABLE_V4, ...hostPublicAddresses().map((a) => `${a}/32`)];
  // replace, not add: idempotent, whatever the namespace already holds.
  const routes = denied.map((cidr) => `route replace unreachable ${cidr}`).join('\n') + '\n';
  if (policy.kind === 'internet') return { kind: 'slirp', routes, nft: '', skipped: [] };
  const skipped: string[] = [];
  const rules: string[] = [];
  for (const entry of policy.hosts) {
    const addresses = isIP(entry.host) ? [entry.host] : await resolveAll(entry.host);
    const allowed = addresses.filter((a) => !isNeverReachable(a));
    if (allowed.length === 0) skipped.push(entry.host);
    for (const a of allowed) {
      rules.push(
        entry.port === undefined ? `ip daddr ${a} accept` : `ip daddr ${a} tcp dport ${entry.port} accept`,
        ...(entry.port === undefined ? [] : [`ip daddr ${a} udp dport ${entry.port} accept`]),
      );
    }
  }
  const nft = [
    'table inet forge_allow {',
    '  chain out {',
    '    type filter hook output priority 0; policy drop;',
    '    oif "lo" accept',
    `    ip daddr ${SLIRP.dns} udp dport 53 accept`,
    `    ip daddr ${SLIRP.dns} tcp dport 53 accept`,
    ...rules.map((r) => `    ${r}`),
    '    reject',
    '  }',
    '}',
    '',
  ].join('\n');
  return { kind: 'slirp', routes, nft, skipped };
}

async function resolveAll(host: string): Promise<string[]> {
  try {
    return (await lookup(host, { all: true, family: 4 })).map((r) => r.address);
  } catch {
    return [];
  }
}
