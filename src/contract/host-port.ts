/**
 * A `host:port` address as Forge's settings write it (FORGE_API_ADDRESS, FORGE_X402_SELL_ADDRESS; validated by
 * loadConfig): the host without an IPv6 literal's brackets, and the port.
 */
export function parseHostPort(address: string): { host: string; port: number } {
  const at = address.lastIndexOf(':');
  return { host: address.slice(0, at).replace(/^\[(.*)\]$/, '$1'), port: Number(address.slice(at + 1)) };
}
