import { createHash, createHmac, randomBytes } from 'node:crypto';
import { frameMac } from '../../src/sandbox/frame-mac.cjs';
import { frameMacOf } from '../../src/sandbox/frames';

test("the harness's arithmetic HMAC equals node:crypto's HMAC-SHA256 over uint32be(seq) || sha256(body)", () => {
  for (let round = 0; round < 50; round++) {
    const key = randomBytes(32);
    const mac = frameMac(Buffer.from(key));
    for (const seq of [0, 1, 2, 255, 65_536, 2 ** 31 - 1, 2 ** 32 - 1]) {
      const body = randomBytes(round * 7).toString('base64');
      const digest = createHash('sha256').update(body).digest();
      const seqBytes = Buffer.alloc(4);
      seqBytes.writeUInt32BE(seq);
      const expected = createHmac('sha256', key).update(seqBytes).update(digest).digest('hex');
      expect(mac(seq, digest)).toBe(expected);
      expect(frameMacOf(key, seq, Buffer.from(body))).toBe(expected);
    }
  }
});

test('the key is zeroed once absorbed', () => {
  const key = randomBytes(32);
  frameMac(key);
  expect(key.equals(Buffer.alloc(32))).toBe(true);
});
