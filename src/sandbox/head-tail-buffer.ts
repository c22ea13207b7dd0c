import { TailBuffer } from './tail-buffer';

/** What the parent kept of one output stream: its first and last bytes, and how much there was. */
export interface CapturedOutput {
  /** The first bytes (up to half of what is kept). */
  head: string;
  /** The last bytes after the head (up to the other half); head + tail is the whole output when not truncated. */
  tail: string;
  /** Every byte the stream carried, kept or not. */
  totalBytes: number;
  /** Bytes between head and tail were dropped. */
  truncated: boolean;
}

/**
 * Keeps the first `headBytes` and the last `tailBytes` of a byte stream: an error report's beginning (the first
 * compile errors) and its end (a test runner's summary), at a bounded cost to the parent, whatever the stream carries.
 */
export class HeadTailBuffer {
  private readonly head: Buffer[] = [];
  private headLength = 0;
  private readonly tail: TailBuffer;
  private total = 0;

  constructor(
    private readonly headBytes: number,
    private readonly tailBytes: number,
  ) {
    this.tail = new TailBuffer(tailBytes);
  }

  push(chunk: Buffer): void {
    this.total += chunk.length;
    let rest = chunk;
    if (this.headLength < this.headBytes) {
      const take = Math.min(rest.length, this.headBytes - this.headLength);
      // A copy: a subarray would keep the whole chunk it came from alive.
      this.head.push(Buffer.from(rest.subarray(0, take)));
      this.headLength += take;
      rest = rest.subarray(take);
    }
    if (rest.length > 0) this.tail.push(rest);
  }

  captured(): CapturedOutput {
    return {
      head: Buffer.concat(this.head).toString('utf8'),
      tail: this.tail.text(),
      totalBytes: this.total,
      truncated: this.total - this.headLength > this.tailBytes,
    };
  }
}
