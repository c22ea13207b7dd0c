import { Client, type ClientConfig, type Notification } from 'pg';
import type { NotificationListener } from './types';

const RECONNECT_DELAY_MS = 1_000;

/**
 * LISTEN needs one long-lived session (a pooled client would drop it), so every channel of one ForgeDatabase shares
 * a dedicated pg.Client. When that connection drops it is re-opened and every channel is listened to again.
 */
export class PgListener {
  private client: Client | undefined;
  private connecting: Promise<Client> | undefined;
  private readonly listeners = new Map<string, Set<NotificationListener>>();
  private readonly reconnectCallbacks = new Set<() => void>();
  private reconnectTimer: NodeJS.Timeout | undefined;
  private closed = false;

  constructor(private readonly config: ClientConfig) {}

  async listen(channel: string, listener: NotificationListener): Promise<() => Promise<void>> {
    let set = this.listeners.get(channel);
    const first = set === undefined;
    if (set === undefined) {
      set = new Set();
      this.listeners.set(channel, set);
    }
    set.add(listener);
    try {
      const client = await this.connection();
      if (first) await client.query(`LISTEN "${channel}"`);
    } catch (err) {
      set.delete(listener);
      if (set.size === 0) this.listeners.delete(channel);
      throw err;
    }
    return async () => {
      const current = this.listeners.get(channel);
      if (!current?.delete(listener) || current.size > 0) return;
      this.listeners.delete(channel);
      if (this.client && !this.closed) await this.client.query(`UNLISTEN "${channel}"`).catch(() => undefined);
    };
  }

  onReconnect(callback: () => void): () => void {
    this.reconnectCallbacks.add(callback);
    return () => this.reconnectCallbacks.delete(callback);
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.reconnectTimer) clearTimeout(this.reconnectTimer);
    const client = this.client ?? (await this.connecting?.catch(() => undefined));
    this.client = undefined;
    await client?.end().catch(() => undefined);
  }

  private connection(): Promise<Client> {
    if (this.client) return Promise.resolve(this.client);
    this.connecting ??= this.open().finally(() => {
      this.connecting = undefined;
    });
    return this.connecting;
  }

  private async open(): Promise<Client> {
    const client = new Client(this.config);
    client.on('notification', (msg: Notification) => {
      for (const listener of this.listeners.get(msg.channel) ?? []) listener(msg.payload ?? '');
    });
    // Without an 'error' handler a dropped connection would crash the process.
    client.on('error', () => this.lost(client));
    client.on('end', () => this.lost(client));
    await client.connect();
    if (this.closed) {
      await client.end();
      throw new Error('listener closed');
    }
    this.client = client;
    return client;
  }

  private lost(client: Client): void {
    if (this.client !== client) return;
    this.client = undefined;
    client.end().catch(() => undefined);
    this.scheduleReconnect();
  }

  private scheduleReconnect(): void {
    if (this.closed || this.listeners.size === 0 || this.reconnectTimer) return;
    this.reconnectTimer = setTimeout(() => {
      this.reconnectTimer = undefined;
      void this.reconnect();
    }, RECONNECT_DELAY_MS);
    // A pending reconnect alone should not keep the process alive.
    this.reconnectTimer.unref();
  }

  private async reconnect(): Promise<void> {
    try {
      const client = await this.connection();
      for (const channel of this.listeners.keys()) await client.query(`LISTEN "${channel}"`);
      for (const callback of this.reconnectCallbacks) callback();
    } catch {
      this.scheduleReconnect();
    }
  }
}
