/** Channel on which tool activations, deactivations and removals are announced; the payload is the tool name. */
export const TOOLS_CHANNEL = 'forge_tools';

const CHANNEL = /^[a-z_][a-z0-9_]{0,62}$/;

/** LISTEN takes an identifier, not a parameter, so channel names are restricted to plain lowercase identifiers. */
export function assertChannelName(channel: string): void {
  if (!CHANNEL.test(channel)) {
    throw new TypeError(`Channel name ${JSON.stringify(channel)} must match ${String(CHANNEL)}.`);
  }
}
