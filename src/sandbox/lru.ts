/** A small most-recently-used map: get() refreshes an entry, set() drops the least recently used beyond `capacity`. */
export class Lru<V> {
  private readonly entries = new Map<string, V>();

  constructor(private readonly capacity: number) {}

  get(key: string): V | undefined {
    const value = this.entries.get(key);
    if (value !== undefined) {
      this.entries.delete(key);
      this.entries.set(key, value); // most recently used last
    }
    return value;
  }

  set(key: string, value: V): void {
    this.entries.set(key, value);
    if (this.entries.size > this.capacity) this.entries.delete(this.entries.keys().next().value as string);
  }
}
