/**
 * FORGE_SANDBOX_NETWORK, what sandbox runs may reach over the network (src/sandbox/network.ts enforces it): `internet`
 * (the default: public destinations only), `none` (loopback only), or an allowlist of `host[:port]` entries. Never the
 * host or its private networks, whatever the setting.
 */
import { ConfigError } from './errors';

export type NetworkPolicy = { kind: 'internet' } | { kind: 'none' } | { kind: 'allow'; hosts: AllowedHost[] };

interface AllowedHost {
  host: string;
  /** Unset: any port. */
  port?: number;
}

/** The default: public destinations only. */
export const INTERNET: NetworkPolicy = { kind: 'internet' };

/**
 * FORGE_SANDBOX_NETWORK's value: `internet` (default), `none`, or a comma list of `host`, `host:port` or `[v6]:port`
 * entries (an allowlist).
 */
export function parseNetworkPolicy(value: string | undefined): NetworkPolicy {
  const text = value?.trim() ?? '';
  if (text === '' || text === 'internet') return INTERNET;
  if (text === 'none') return { kind: 'none' };
  const hosts = text.split(',').map((entry) => parseAllowed(entry.trim()));
  return { kind: 'allow', hosts };
}

function parseAllowed(entry: string): AllowedHost {
  const m = /^(?:\[([0-9a-fA-F:.]+)\]|([A-Za-z0-9.-]+|[0-9a-fA-F:]+))(?::(\d{1,5}))?$/.exec(entry);
  const host = m?.[1] ?? m?.[2];
  const port = m?.[3] === undefined ? undefined : Number(m[3]);
  if (!host || (port !== undefined && (port < 1 || port > 65535))) {
    throw new ConfigError(
      `FORGE_SANDBOX_NETWORK: ${JSON.stringify(entry)} is not a host or host:port (use internet, none, or a comma list such as api.example.com,example.org:443)`,
      'FORGE_SANDBOX_NETWORK',
    );
  }
  return port === undefined ? { host: host.toLowerCase() } : { host: host.toLowerCase(), port };
}

/** The policy as the operator would write it again. */
export function describeNetworkPolicy(policy: NetworkPolicy): string {
  if (policy.kind !== 'allow') return policy.kind;
  return `allowlist ${policy.hosts.map((h) => (h.port === undefined ? h.host : `${h.host}:${h.port}`)).join(',')}`;
}
