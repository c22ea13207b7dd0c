import { createHash, createHmac, randomBytes } from 'node:crypto';
import { frameMac } from '../../src/sandbox/frame-mac.cjs';
import { frameMacOf } from '../../src/sandbox/frames';

test("the harness's arithmetic HMAC equals node:crypto's HMAC-SHA256 over uint32be(seq) || sha256(utf16le(body))", () => {
  for (let round = 0; round < 80; round++) {
    const key = randomBytes(32);
    const mac = frameMac(Buffer.from(key));
    for (const seq of [0, 1, 2, 255, 65_536, 2 ** 31 - 1, 2 ** 32 - 1]) {
      // Bodies of every length around SHA-256's block and padding boundaries, with characters beyond Latin-1 and
      // beyond the BMP (surrogate pairs).
      const body = `é€𝄞${randomBytes(round).toString('base64')}`.slice(0, round + 2);
      const digest = createHash('sha256').update(Buffer.from(body, 'utf16le')).digest();
      const seqBytes = Buffer.alloc(4);
      seqBytes.writeUInt32BE(seq);
      const expected = createHmac('sha256', key).update(seqBytes).update(digest).digest('hex');
      expect(mac(seq, body)).toBe(expected);
      expect(frameMacOf(key, seq, body)).toBe(expected);
    }
  }
});

test('a large body (4 Mi characters, as a result frame may be) gives the same MAC', () => {
  const key = randomBytes(32);
  const body = randomBytes(3 * 1024 * 1024).toString('base64'); // 4 Mi characters
  const seqBytes = Buffer.alloc(4);
  seqBytes.writeUInt32BE(7);
  const digest = createHash('sha256').update(Buffer.from(body, 'utf16le')).digest();
  const expected = createHmac('sha256', key).update(seqBytes).update(digest).digest('hex');
  expect(frameMac(Buffer.from(key))(7, body)).toBe(expected);
});

test('the key is zeroed once absorbed', () => {
  const key = randomBytes(32);
  frameMac(key);
  expect(key.equals(Buffer.alloc(32))).toBe(true);
});
