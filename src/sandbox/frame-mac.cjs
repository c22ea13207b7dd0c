// @ts-check
/**
 * HMAC-SHA256 for the harness's frames, in plain arithmetic over typed arrays the harness owns.
 *
 * Why not node:crypto: the harness computes a frame's MAC after the tool's module has loaded, and by then the tool may
 * have rewritten anything reachable, Node's internal bindings included (`process.binding('crypto')`). Handing the key
 * to a library call would hand it to whatever the tool put there. Here the key is absorbed once, before any tool code
 * exists, into the two SHA-256 states HMAC starts from; the key bytes are then zeroed, and those states never leave
 * this module's closure. (Loading node:crypto would also cost the harness ~6 ms of start-up on every run.)
 *
 * What is authenticated is `seq` (the frame's number, so a captured frame cannot be replayed) and the SHA-256 digest
 * of the frame's body as UTF-16LE, read code unit by code unit through String.prototype.charCodeAt as it was when
 * this module loaded. No library call touches the body on its way into the MAC: a tool that could rewrite how it is
 * encoded (Buffer.prototype.utf8Write, say) and read the MAC back (by swapping fd 3) would otherwise get MACs of
 * bodies of its choosing.
 *
 * The parent checks with node:crypto: HMAC-SHA256(key, uint32be(seq) || sha256(utf16le(body))) (test/sandbox/frame-mac).
 */
'use strict';

const K = new Int32Array([
  0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74,
  0x80deb1fe, 0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d,
  0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e,
  0x92722c85, 0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5,
  0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3, 0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
]);
const IV = new Int32Array([0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19]);
const HEX = '0123456789abcdef';
// `charCodeAt(text, i)`: bound now, so that a later change to String.prototype or Function.prototype.call is not seen.
const charCodeAt = Function.prototype.call.bind(String.prototype.charCodeAt);
// Everything a MAC computation calls is bound here or plain arithmetic on this module's typed arrays (indexing a typed
// array consults no prototype); their methods (fill, ...) run only while the key is absorbed, before any tool code.
const floor = Math.floor;

/**
 * One SHA-256 compression: `out` = `state` after absorbing the 16 big-endian words of `block` (`w`: scratch).
 * @param {Int32Array} state
 * @param {Int32Array} block
 * @param {Int32Array} out
 * @param {Int32Array} w
 */
function compress(state, block, out, w) {
  for (let i = 0; i < 16; i++) w[i] = block[i];
  for (let i = 16; i < 64; i++) {
    const x = w[i - 15];
    const y = w[i - 2];
    const s0 = ((x >>> 7) | (x << 25)) ^ ((x >>> 18) | (x << 14)) ^ (x >>> 3);
    const s1 = ((y >>> 17) | (y << 15)) ^ ((y >>> 19) | (y << 13)) ^ (y >>> 10);
    w[i] = (w[i - 16] + s0 + w[i - 7] + s1) | 0;
  }
  let a = state[0];
  let b = state[1];
  let c = state[2];
  let d = state[3];
  let e = state[4];
  let f = state[5];
  let g = state[6];
  let h = state[7];
  for (let i = 0; i < 64; i++) {
    const S1 = ((e >>> 6) | (e << 26)) ^ ((e >>> 11) | (e << 21)) ^ ((e >>> 25) | (e << 7));
    const t1 = (h + S1 + ((e & f) ^ (~e & g)) + K[i] + w[i]) | 0;
    const S0 = ((a >>> 2) | (a << 30)) ^ ((a >>> 13) | (a << 19)) ^ ((a >>> 22) | (a << 10));
    const t2 = (S0 + ((a & b) ^ (a & c) ^ (b & c))) | 0;
    h = g;
    g = f;
    f = e;
    e = (d + t1) | 0;
    d = c;
    c = b;
    b = a;
    a = (t1 + t2) | 0;
  }
  out[0] = (state[0] + a) | 0;
  out[1] = (state[1] + b) | 0;
  out[2] = (state[2] + c) | 0;
  out[3] = (state[3] + d) | 0;
  out[4] = (state[4] + e) | 0;
  out[5] = (state[5] + f) | 0;
  out[6] = (state[6] + g) | 0;
  out[7] = (state[7] + h) | 0;
}

/**
 * Absorbs a 32-byte key (then zeroes it) and returns `mac(seq, body)`: the hex HMAC-SHA256 of uint32be(seq) followed
 * by the SHA-256 digest of the string `body` as UTF-16LE.
 * @param {Uint8Array} key
 * @returns {(seq: number, body: string) => string}
 */
function frameMac(key) {
  if (key.length !== 32) throw new Error('the frame key must be 32 bytes');
  const w = new Int32Array(64);
  const block = new Int32Array(16);
  const inner = new Int32Array(8);
  const outer = new Int32Array(8);
  const scratch = new Int32Array(8);
  const digest = new Int32Array(8);
  for (const [pad, state] of /** @type {[number, Int32Array][]} */ ([
    [0x36363636, inner],
    [0x5c5c5c5c, outer],
  ])) {
    for (let j = 0; j < 16; j++) {
      const word = j < 8 ? (key[4 * j] << 24) | (key[4 * j + 1] << 16) | (key[4 * j + 2] << 8) | key[4 * j + 3] : 0;
      block[j] = word ^ pad;
    }
    compress(IV, block, state, w);
  }
  key.fill(0);
  block.fill(0);

  /**
   * SHA-256 of `text` as UTF-16LE (two bytes a code unit) into `digest`.
   * @param {string} text
   */
  function sha256(text) {
    for (let j = 0; j < 8; j++) digest[j] = IV[j];
    const units = text.length;
    let offset = 0;
    for (; offset + 32 <= units; offset += 32) {
      for (let j = 0; j < 16; j++) {
        const a = charCodeAt(text, offset + 2 * j);
        const b = charCodeAt(text, offset + 2 * j + 1);
        block[j] = ((a & 255) << 24) | ((a >>> 8) << 16) | ((b & 255) << 8) | (b >>> 8);
      }
      compress(digest, block, digest, w);
    }
    // The tail, 0x80, zeros, and the length in bits: one block, or two when the tail leaves no room for the length.
    const tailBytes = 2 * (units - offset);
    for (let j = 0; j < 16; j++) block[j] = 0;
    for (let i = 0; i < tailBytes; i += 2) {
      const c = charCodeAt(text, offset + i / 2);
      block[i >> 2] |= (c & 255) << (24 - 8 * (i & 3));
      block[(i + 1) >> 2] |= (c >>> 8) << (24 - 8 * ((i + 1) & 3));
    }
    block[tailBytes >> 2] |= 0x80 << (24 - 8 * (tailBytes & 3));
    if (tailBytes >= 56) {
      compress(digest, block, digest, w);
      for (let j = 0; j < 16; j++) block[j] = 0;
    }
    const bytes = 2 * units;
    block[14] = floor(bytes / 0x20000000);
    block[15] = (bytes * 8) | 0;
    compress(digest, block, digest, w);
  }

  /**
   * @param {number} seq
   * @param {string} body
   */
  return function mac(seq, body) {
    sha256(body);
    // Inner: 64 bytes of ipad already absorbed, then 36 bytes (seq, digest) and SHA-256's padding: 800 bits in all.
    block[0] = seq | 0;
    for (let j = 0; j < 8; j++) block[j + 1] = digest[j];
    block[9] = 0x80000000 | 0;
    for (let j = 10; j < 15; j++) block[j] = 0;
    block[15] = 800;
    compress(inner, block, scratch, w);
    // Outer: opad's 64 bytes, then the inner hash's 32 and padding: 768 bits.
    for (let j = 0; j < 8; j++) block[j] = scratch[j];
    block[8] = 0x80000000 | 0;
    for (let j = 9; j < 15; j++) block[j] = 0;
    block[15] = 768;
    compress(outer, block, scratch, w);
    let hex = '';
    for (let j = 0; j < 8; j++) {
      for (let shift = 28; shift >= 0; shift -= 4) hex += HEX[(scratch[j] >>> shift) & 15];
    }
    return hex;
  };
}

module.exports = { frameMac };
