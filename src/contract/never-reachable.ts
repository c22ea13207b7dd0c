/**
 * Addresses nothing Forge fetches on someone else's behalf may reach: a sandbox run (src/sandbox/network.ts routes them
 * unreachable) and the dev facilitator's discovery registration (src/x402/facilitator-server.ts refuses them) share this
 * one list. Pure string logic (no Node): every layer may import it.
 */

/**
 * IPv4 ranges no run ever reaches, whatever the policy: this host, its networks and everything that is not a public
 * destination (RFC 6890's special-purpose registry, less the documentation ranges, which are public-looking by design
 * and what the tests' own "internet" server lives on).
 */
export const NEVER_REACHABLE_V4 = [
  '0.0.0.0/8', // "this network"
  '10.0.0.0/8', // private
  '100.64.0.0/10', // shared address space (carrier-grade NAT)
  '127.0.0.0/8', // loopback
  '169.254.0.0/16', // link-local, the cloud metadata service
  '172.16.0.0/12', // private
  '192.0.0.0/24', // IETF protocol assignments
  '192.88.99.0/24', // 6to4 relay anycast
  '192.168.0.0/16', // private
  '198.18.0.0/15', // benchmarking
  '224.0.0.0/3', // multicast, reserved, broadcast
] as const;

/** A dotted-quad IPv4 address as a 32-bit number, or undefined when it is not one (strictly four decimal parts). */
export function ipv4Value(address: string): number | undefined {
  const m = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(address);
  if (!m) return undefined;
  const parts = m.slice(1).map(Number);
  if (parts.some((p) => p > 255)) return undefined;
  return parts.reduce((acc, part) => acc * 256 + part, 0) >>> 0;
}

/** Whether an IPv4 address (dotted quad) is in {@link NEVER_REACHABLE_V4}; anything that is not IPv4 is too. */
export function isNeverReachable(address: string): boolean {
  const value = ipv4Value(address);
  if (value === undefined) return true; // not IPv4: runs have no IPv6 route, so nothing to allow
  return NEVER_REACHABLE_V4.some((cidr) => {
    const [base, bits] = cidr.split('/');
    const mask = Number(bits) === 0 ? 0 : (~0 << (32 - Number(bits))) >>> 0;
    return (value & mask) >>> 0 === (ipv4Value(base)! & mask) >>> 0;
  });
}

/** The eight 16-bit groups of an IPv6 address (`::` and a trailing dotted quad allowed), or undefined. */
function ipv6Groups(address: string): number[] | undefined {
  let text = address.toLowerCase();
  const zone = text.indexOf('%');
  if (zone >= 0) text = text.slice(0, zone);
  if (!/^[0-9a-f:.]+$/.test(text) || !text.includes(':')) return undefined;
  const lastColon = text.lastIndexOf(':');
  if (text.slice(lastColon + 1).includes('.')) {
    // A trailing dotted quad (::ffff:127.0.0.1) is the last two groups written another way.
    const v4 = ipv4Value(text.slice(lastColon + 1));
    if (v4 === undefined) return undefined;
    text = `${text.slice(0, lastColon + 1)}${(v4 >>> 16).toString(16)}:${(v4 & 0xffff).toString(16)}`;
  }
  const halves = text.split('::');
  if (halves.length > 2) return undefined;
  const parse = (part: string): number[] | undefined => {
    if (part === '') return [];
    const groups = part.split(':').map((g) => (/^[0-9a-f]{1,4}$/.test(g) ? parseInt(g, 16) : NaN));
    return groups.some(Number.isNaN) ? undefined : groups;
  };
  const head = parse(halves[0]);
  const rest = halves.length === 2 ? parse(halves[1]) : [];
  if (!head || !rest) return undefined;
  const given = head.length + rest.length;
  if (halves.length === 1) return given === 8 ? head : undefined;
  if (given > 7) return undefined;
  return [...head, ...new Array<number>(8 - given).fill(0), ...rest];
}

/**
 * Whether an IP address, IPv4 or IPv6, is one nothing may be fetched at for someone else: IPv4 in
 * {@link NEVER_REACHABLE_V4}; IPv6 unspecified, loopback, link-local, unique-local, site-local or multicast; and an
 * IPv6 address that carries an IPv4 one (mapped, compatible, NAT64, 6to4) whenever that IPv4 address is. False for a
 * public address, and for a string that is not an address (a name is resolved, then its addresses are asked about).
 */
export function isPrivateAddress(address: string): boolean {
  const bare = address.startsWith('[') && address.endsWith(']') ? address.slice(1, -1) : address;
  if (ipv4Value(bare) !== undefined) return isNeverReachable(bare);
  const g = ipv6Groups(bare);
  if (!g) return false;
  const embedded = (hi: number, lo: number) => isNeverReachable(`${hi >>> 8}.${hi & 0xff}.${lo >>> 8}.${lo & 0xff}`);
  if (g.slice(0, 5).every((x) => x === 0) && (g[5] === 0xffff || g[5] === 0)) {
    // ::ffff:a.b.c.d (mapped), ::a.b.c.d (compatible), and :: and ::1 themselves.
    return g[5] === 0 && g[6] === 0 && g[7] <= 1 ? true : embedded(g[6], g[7]);
  }
  if (g[0] === 0x64 && g[1] === 0xff9b) return embedded(g[6], g[7]); // NAT64
  if (g[0] === 0x2002) return embedded(g[1], g[2]); // 6to4
  if ((g[0] & 0xffc0) === 0xfe80 || (g[0] & 0xffc0) === 0xfec0) return true; // link-local, site-local
  if ((g[0] & 0xfe00) === 0xfc00) return true; // unique local
  if ((g[0] & 0xff00) === 0xff00) return true; // multicast
  return false;
}

/**
 * Whether a URL's host (as WHATWG `URL` normalises it: `2130706433` and `0x7f000001` are `127.0.0.1` by then, an IPv6
 * literal in brackets) names a never-reachable address: an IP literal that {@link isPrivateAddress} refuses, or
 * `localhost` and its subdomains (RFC 6761: they resolve to loopback, whatever DNS says).
 */
export function isPrivateHost(hostname: string): boolean {
  const host = hostname.toLowerCase().replace(/\.$/, '');
  if (host === 'localhost' || host.endsWith('.localhost')) return true;
  return isPrivateAddress(host);
}
