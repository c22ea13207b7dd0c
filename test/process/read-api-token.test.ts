import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import * as crypto from 'node:crypto';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { clientReadApiToken, presentsToken, readApiTokenFileOf, tokenDigest, workerReadApiToken } from '../../src/process/read-api-token';

// Every comparison the read API makes goes through this, so the test can see what it compares (node:crypto's own
// properties cannot be spied on in place).
jest.mock('node:crypto', () => {
  const actual = jest.requireActual<typeof crypto>('node:crypto');
  return { ...actual, timingSafeEqual: jest.fn(actual.timingSafeEqual) };
});
const timingSafeEqual = crypto.timingSafeEqual as jest.MockedFunction<typeof crypto.timingSafeEqual>;

/** The read API's token (issue 24): one per FORGE_HOME, private, compared in constant time. */
describe("the read API's token", () => {
  let home: string;
  beforeEach(() => {
    home = mkdtempSync(path.join(tmpdir(), 'forge-read-api-token-'));
  });
  afterEach(() => rmSync(home, { recursive: true, force: true }));

  test('compared in constant time: one comparison of two 32-byte digests, whatever was sent', () => {
    const token = 'a-token-of-the-tests-own-0123456789';
    const expected = tokenDigest(token);
    const cases: [string | undefined, boolean][] = [
      [undefined, false],
      ['', false],
      ['Bearer', false],
      ['Bearer x', false],
      [`Bearer ${token}x`, false],
      [`Bearer ${token.slice(0, -1)}`, false],
      [`Bearer ${token.toUpperCase()}`, false],
      [`Bearer ${'z'.repeat(10_000)}`, false],
      [token, false],
      [`Basic ${token}`, false],
      [`Bearer ${token}`, true],
      [`bearer   ${token} `, true],
    ];
    for (const [header, accepted] of cases) {
      timingSafeEqual.mockClear();
      expect({ header, accepted: presentsToken(header, expected) }).toEqual({ header, accepted });
      // No early return on a missing header, a wrong length or a wrong prefix: the same comparison every time.
      expect(timingSafeEqual).toHaveBeenCalledTimes(1);
      const [a, b] = timingSafeEqual.mock.calls[0] as [Buffer, Buffer];
      expect([a.length, b.length]).toEqual([32, 32]);
    }
  });

  test('the first worker of a home writes it 0600; later and concurrent workers get the same one; FORGE_API_TOKEN wins', async () => {
    const tokens = await Promise.all(Array.from({ length: 8 }, () => workerReadApiToken(home, undefined)));
    expect(new Set(tokens).size).toBe(1);
    expect(tokens[0]).toMatch(/^[A-Za-z0-9_-]{43}$/);
    const file = readApiTokenFileOf(home);
    expect(readFileSync(file, 'utf8').trim()).toBe(tokens[0]);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(readdirSync(home)).toEqual(['read-api.token']); // no temp file left behind
    expect(await workerReadApiToken(home, undefined)).toBe(tokens[0]);
    expect(await workerReadApiToken(home, 'configured-token-0123456789')).toBe('configured-token-0123456789');

    // A client of the same home reads it; FORGE_API_TOKEN wins there too; without either it has none.
    expect(clientReadApiToken(home, undefined)).toBe(tokens[0]);
    expect(clientReadApiToken(home, 'configured-token-0123456789')).toBe('configured-token-0123456789');
    expect(clientReadApiToken(path.join(home, 'elsewhere'), undefined)).toBeUndefined();
  });

  test('a token file that holds no token is replaced by a new token', async () => {
    writeFileSync(readApiTokenFileOf(home), '\n', { mode: 0o600 });
    expect(clientReadApiToken(home, undefined)).toBeUndefined();
    const token = await workerReadApiToken(home, undefined);
    expect(token).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(clientReadApiToken(home, undefined)).toBe(token);
    expect(statSync(readApiTokenFileOf(home)).mode & 0o777).toBe(0o600);
  });
});
