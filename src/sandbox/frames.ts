import { createHash, createHmac, timingSafeEqual } from 'node:crypto';

/**
 * HMAC-SHA256(key, uint32be(seq) || sha256(utf16le(body))), hex: the MAC the harness (frame-mac.cjs) puts on each
 * frame. `body` arrives as UTF-8; the harness hashed the string's code units.
 */
export function frameMacOf(key: Buffer, seq: number, body: string): string {
  const seqBytes = Buffer.alloc(4);
  seqBytes.writeUInt32BE(seq >>> 0);
  const digest = createHash('sha256').update(Buffer.from(body, 'utf16le')).digest();
  return createHmac('sha256', key).update(seqBytes).update(digest).digest('hex');
}

const MAC_HEX = 64;

/**
 * The parent's end of the harness channel (fd 3). The harness writes one frame a line, `MAC SEQ BODY`, where BODY is
 * JSON and MAC authenticates SEQ and BODY under the run's key (sent to the harness before the tool existed and never
 * sent back). Only frames whose MAC checks out and whose number is past the last accepted one are returned: whatever
 * else arrives (a tool writing to fd 3, replaying a frame it caught, or leaving half a line) is dropped. At most
 * `maxBytes` of an unfinished line are held, and at most twice that read in all, so flooding fd 3 can make the parent
 * neither buffer nor hash without bound.
 */
export class FrameChannel {
  private pending: Buffer[] = [];
  private pendingBytes = 0;
  private nextSeq = 0;
  private received = 0;

  constructor(
    private readonly key: Buffer,
    private readonly maxBytes: number,
  ) {}

  push(chunk: Buffer): Record<string, unknown>[] | 'overflow' {
    // The harness's own frames come to one result and a little more; a tool writing lines to fd 3 would otherwise
    // make the parent check a MAC per line for as long as it runs.
    this.received += chunk.length;
    if (this.received > 2 * this.maxBytes) return 'overflow';
    const frames: Record<string, unknown>[] = [];
    let rest = chunk;
    for (let nl = rest.indexOf(10); nl >= 0; nl = rest.indexOf(10)) {
      const line = Buffer.concat([...this.pending, rest.subarray(0, nl)]);
      this.pending = [];
      this.pendingBytes = 0;
      rest = rest.subarray(nl + 1);
      const frame = this.authenticated(line);
      if (frame) frames.push(frame);
    }
    if (rest.length > 0) {
      this.pending.push(rest);
      this.pendingBytes += rest.length;
      if (this.pendingBytes > this.maxBytes) return 'overflow';
    }
    return frames;
  }

  private authenticated(line: Buffer): Record<string, unknown> | undefined {
    if (line.length < MAC_HEX + 3 || line[MAC_HEX] !== 0x20) return undefined;
    const space = line.indexOf(0x20, MAC_HEX + 1);
    if (space < 0) return undefined;
    const seqText = line.subarray(MAC_HEX + 1, space).toString('latin1');
    if (!/^\d{1,10}$/.test(seqText)) return undefined;
    const seq = Number(seqText);
    if (seq < this.nextSeq || seq > 0xffff_ffff) return undefined;
    const body = line.subarray(space + 1).toString('utf8');
    const expected = Buffer.from(frameMacOf(this.key, seq, body), 'latin1');
    if (!timingSafeEqual(line.subarray(0, MAC_HEX), expected)) return undefined;
    this.nextSeq = seq + 1;
    try {
      const value: unknown = JSON.parse(body);
      return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
    } catch {
      return undefined;
    }
  }
}
