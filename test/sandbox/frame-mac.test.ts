import { createHash, createHmac, randomBytes } from 'node:crypto';
import { frameMac } from '../../src/sandbox/frame-mac.cjs';
import { frameMacOf } from '../../src/sandbox/frames';

test("the harness's arithmetic HMAC equals node:crypto's HMAC-SHA256 over uint32be(seq) || sha256(body)", () => {
  for (let round = 0; round < 60; round++) {
    const key = randomBytes(32);
    const mac = frameMac(Buffer.from(key));
    for (const seq of [0, 1, 2, 255, 65_536, 2 ** 31 - 1, 2 ** 32 - 1]) {
      // Bodies of every length around SHA-256's block and padding boundaries, and multi-byte UTF-8.
      const body = Buffer.from(`${randomBytes(round * 3).toString('base64')}é€𝄞`.slice(0, round * 3 + 3), 'utf8');
      const digest = createHash('sha256').update(body).digest();
      const seqBytes = Buffer.alloc(4);
      seqBytes.writeUInt32BE(seq);
      const expected = createHmac('sha256', key).update(seqBytes).update(digest).digest('hex');
      expect(mac(seq, body, body.length)).toBe(expected);
      expect(frameMacOf(key, seq, body)).toBe(expected);
    }
  }
});

test('a large body (4 MiB, as a result frame may be) digests to the same MAC', () => {
  const key = randomBytes(32);
  const body = randomBytes(4 * 1024 * 1024);
  const seqBytes = Buffer.alloc(4);
  seqBytes.writeUInt32BE(7);
  const expected = createHmac('sha256', key).update(seqBytes).update(createHash('sha256').update(body).digest()).digest('hex');
  expect(frameMac(Buffer.from(key))(7, body, body.length)).toBe(expected);
});

test('the key is zeroed once absorbed', () => {
  const key = randomBytes(32);
  frameMac(key);
  expect(key.equals(Buffer.alloc(32))).toBe(true);
});
