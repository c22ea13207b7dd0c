/** Keeps only the last `maxBytes` of a byte stream, so a flood costs the parent no more than that much memory. */
export class TailBuffer {
  private chunks: Buffer[] = [];
  private bytes = 0;
  constructor(private readonly maxBytes: number) {}

  push(chunk: Buffer): void {
    if (this.maxBytes <= 0) return;
    this.chunks.push(chunk.length > this.maxBytes ? chunk.subarray(chunk.length - this.maxBytes) : chunk);
    this.bytes += Math.min(chunk.length, this.maxBytes);
    while (this.bytes - this.chunks[0].length >= this.maxBytes) {
      this.bytes -= this.chunks[0].length;
      this.chunks.shift();
    }
  }

  text(): string {
    const all = Buffer.concat(this.chunks);
    return all.subarray(Math.max(0, all.length - this.maxBytes)).toString('utf8');
  }
}
