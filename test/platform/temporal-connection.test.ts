import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { PlatformUnreachableError } from '../../src/contract/errors';
import { findFreePort } from '../../src/process/free-port';
import { findTemporalBinary, temporalBinarySearchPath } from '../../src/platform/temporal-binary';
import { packageRoot } from '../../src/sandbox/paths';
import { connectClient, isUnreachableError, resolveTemporalConnection } from '../../src/platform/temporal-connection';
import { connectWorkerConnection } from '../../src/platform/worker-connection';

describe('resolveTemporalConnection (envconfig)', () => {
  test('defaults to localhost:7233 and the default namespace', () => {
    const resolved = resolveTemporalConnection({ env: {} });
    expect(resolved).toMatchObject({ address: 'localhost:7233', namespace: 'default' });
  });

  test('reads TEMPORAL_ADDRESS and TEMPORAL_NAMESPACE; explicit options win', () => {
    const env = { TEMPORAL_ADDRESS: 'temporal.example:7233', TEMPORAL_NAMESPACE: 'agents' };
    expect(resolveTemporalConnection({ env })).toMatchObject({ address: 'temporal.example:7233', namespace: 'agents' });
    expect(resolveTemporalConnection({ env, address: '127.0.0.1:7999', namespace: 'other' })).toMatchObject({
      address: '127.0.0.1:7999',
      namespace: 'other',
      connectionOptions: { address: '127.0.0.1:7999' },
    });
  });

  test('an API key turns TLS on, as envconfig does', () => {
    const resolved = resolveTemporalConnection({ env: { TEMPORAL_API_KEY: 'k', TEMPORAL_ADDRESS: 'x:7233' } });
    expect(resolved.connectionOptions).toMatchObject({ apiKey: 'k', tls: true });
  });
});

describe('connecting to a Temporal that is not there', () => {
  test('client and worker connections fail with one clear PlatformUnreachableError', async () => {
    const address = `127.0.0.1:${await findFreePort()}`;
    for (const attempt of [() => connectClient({ address, connectTimeoutMs: 1_000 }), () => connectWorkerConnection({ address })]) {
      const err = await attempt().then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(PlatformUnreachableError);
      const message = (err as PlatformUnreachableError).message;
      expect(message).toContain(address);
      expect(message.split(/\.\s/)).toHaveLength(1); // one sentence
      expect(isUnreachableError(err)).toBe(true);
    }
  });

  test('other errors are not taken for unreachability', () => {
    expect(isUnreachableError(new Error('workflow failed'))).toBe(false);
  });
});

describe('findTemporalBinary', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(path.join(tmpdir(), 'forge-bin-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  function fakeBinary(folder: string): string {
    mkdirSync(folder, { recursive: true });
    const file = path.join(folder, 'temporal');
    writeFileSync(file, '#!/bin/sh\n');
    chmodSync(file, 0o755);
    return file;
  }

  // The project's own .forge/ is the last place searched; setup may have installed a binary there (it has on a
  // machine that ran npm test), so "nothing found" means "nothing before that fallback".
  const ownFallback = () => findTemporalBinary({ PATH: '', FORGE_HOME: path.join(dir, 'nowhere') });

  test("searches PATH, then $FORGE_HOME/bin, then $FORGE_HOME/venv/bin, then the project's own .forge/", () => {
    const home = path.join(dir, 'home');
    const env = { PATH: path.join(dir, 'path'), FORGE_HOME: home };
    expect(temporalBinarySearchPath(env).slice(-2)).toEqual([path.join(packageRoot(), '.forge', 'bin'), path.join(packageRoot(), '.forge', 'venv', 'bin')]);
    expect(findTemporalBinary(env)).toBe(ownFallback());
    const venv = fakeBinary(path.join(home, 'venv', 'bin'));
    expect(findTemporalBinary(env)).toBe(venv);
    const bin = fakeBinary(path.join(home, 'bin'));
    expect(findTemporalBinary(env)).toBe(bin);
    const onPath = fakeBinary(path.join(dir, 'path'));
    expect(findTemporalBinary(env)).toBe(onPath);
  });

  test('ignores a file that is not executable', () => {
    const home = path.join(dir, 'home');
    const file = fakeBinary(path.join(home, 'bin'));
    chmodSync(file, 0o644);
    expect(findTemporalBinary({ PATH: '', FORGE_HOME: home })).toBe(ownFallback());
  });
});
