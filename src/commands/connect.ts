import { ForgeClient } from '../client';

/** Connects the SDK for one CLI command and closes it afterwards, whatever happens. */
export async function withForgeClient<T>(fn: (client: ForgeClient) => Promise<T>): Promise<T> {
  const client = await ForgeClient.connect();
  try {
    return await fn(client);
  } finally {
    await client.close().catch(() => undefined);
  }
}
