import type { StatementLocation } from './types';

/**
 * Maps between the UTF-8 byte offsets libpg_query reports (stmt_location, scanner tokens) and the UTF-16 offsets
 * JavaScript strings use, and from offsets to line and column. Pure ASCII text, the usual case, needs no tables.
 */
export class TextIndex {
  private readonly byteToChar: Int32Array | undefined;
  private lineStarts: number[] | undefined;

  constructor(readonly text: string) {
    const byteLength = Buffer.byteLength(text, 'utf8');
    if (byteLength === text.length) return;
    const map = new Int32Array(byteLength + 1);
    let byte = 0;
    let char = 0;
    for (const codePoint of text) {
      const cp = codePoint.codePointAt(0) ?? 0;
      const width = cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
      // Every byte of a multi-byte sequence maps to the character's start, so a cut never splits a character.
      for (let i = 0; i < width; i++) map[byte + i] = char;
      byte += width;
      char += codePoint.length;
    }
    map[byteLength] = char;
    this.byteToChar = map;
  }

  /** UTF-16 offset of a UTF-8 byte offset (clamped to the text). */
  charOffset(byteOffset: number): number {
    if (!this.byteToChar) return Math.min(Math.max(byteOffset, 0), this.text.length);
    const clamped = Math.min(Math.max(byteOffset, 0), this.byteToChar.length - 1);
    return this.byteToChar[clamped];
  }

  /** 1-based line and column of a UTF-16 offset. */
  location(offset: number): StatementLocation {
    this.lineStarts ??= computeLineStarts(this.text);
    const starts = this.lineStarts;
    let lo = 0;
    let hi = starts.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (starts[mid] <= offset) lo = mid;
      else hi = mid - 1;
    }
    return { offset, line: lo + 1, column: offset - starts[lo] + 1 };
  }
}

function computeLineStarts(text: string): number[] {
  const starts = [0];
  for (let i = 0; i < text.length; i++) if (text.charCodeAt(i) === 10) starts.push(i + 1);
  return starts;
}
