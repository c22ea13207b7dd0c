/**
 * Where SQL text stops being valid UTF-8 (SCHEMA_POLICY.md "Limits"). PostgreSQL refuses such text while the judge,
 * reading a JavaScript string, would see something else (a replacement character, or a lone surrogate that has no
 * UTF-8 form at all): the migration is refused before parsing, naming the byte offset.
 */

/** Byte offset of the first byte that does not belong to a well-formed UTF-8 sequence, or undefined when all do. */
export function invalidUtf8Offset(bytes: Uint8Array): number | undefined {
  let i = 0;
  while (i < bytes.length) {
    const b = bytes[i];
    if (b < 0x80) {
      i++;
      continue;
    }
    // Lead byte: sequence length and the range its second byte must fall in (no overlongs, no surrogates, <= U+10FFFF).
    let length: number;
    let lo = 0x80;
    let hi = 0xbf;
    if (b >= 0xc2 && b <= 0xdf) length = 2;
    else if (b >= 0xe0 && b <= 0xef) {
      length = 3;
      if (b === 0xe0) lo = 0xa0;
      if (b === 0xed) hi = 0x9f;
    } else if (b >= 0xf0 && b <= 0xf4) {
      length = 4;
      if (b === 0xf0) lo = 0x90;
      if (b === 0xf4) hi = 0x8f;
    } else return i;
    for (let k = 1; k < length; k++) {
      const c = bytes[i + k];
      if (c === undefined || c < (k === 1 ? lo : 0x80) || c > (k === 1 ? hi : 0xbf)) return i;
    }
    i += length;
  }
  return undefined;
}

/**
 * UTF-16 offset of the first lone surrogate of a string (a half of a pair without the other half: it has no UTF-8
 * form, and Node would send U+FFFD in its place), or undefined when there is none.
 */
export function loneSurrogateOffset(text: string): number | undefined {
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 0xd800 || c > 0xdfff) continue;
    if (c <= 0xdbff) {
      const next = text.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) {
        i++;
        continue;
      }
    }
    return i;
  }
  return undefined;
}

/** The UTF-8 byte offset of UTF-16 offset `index` of a string whose characters before it are well-formed. */
export function utf8OffsetOf(text: string, index: number): number {
  return Buffer.byteLength(text.slice(0, index), 'utf8');
}
