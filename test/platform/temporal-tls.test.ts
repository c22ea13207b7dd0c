import { readFileSync, rmSync, statSync, unlinkSync, writeFileSync } from 'node:fs';
import http2 from 'node:http2';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import type { TLSSocket } from 'node:tls';
import { loadClientConfigFromToml } from '@temporalio/envconfig';
import { PlatformUnreachableError } from '../../src/contract/errors';
import { connectClient, resolveTemporalConnection } from '../../src/platform/temporal-connection';
import { connectWorkerConnection } from '../../src/platform/worker-connection';
import { issueStackCerts, opensslVerify, runStackCertsScript, STACK_CERT_PARTIES } from '../helpers/stack-certs';

/*
 * Forge against a Temporal that asks who is calling. The dev server cannot do mTLS, so the far end here is an HTTP/2
 * server that requires a client certificate of the compose stack's CA (docker/temporal-certs.sh) and answers
 * GetSystemInfo the way a frontend does (an empty response): Forge's own connection code (the client's and the
 * worker's) is configured only through @temporalio/envconfig's settings, as in docker-compose.yml.
 */

let certs: string;
let other: string;
beforeAll(async () => {
  certs = (await issueStackCerts()).dir;
  // A second, unrelated stack: its certificates are well-formed but of another CA.
  other = (await issueStackCerts()).dir;
});
afterAll(() => {
  for (const dir of [certs, other]) rmSync(path.dirname(dir), { recursive: true, force: true });
});

const file = (party: string, name: string, dir = certs) => path.join(dir, party, name);

/** The settings docker-compose.yml gives forge-worker, pointing at this test's files. */
const envconfigTls = (party = 'forge', dir = certs) => ({
  TEMPORAL_TLS_CLIENT_CERT_PATH: file(party, 'cert.pem', dir),
  TEMPORAL_TLS_CLIENT_KEY_PATH: file(party, 'key.pem', dir),
  TEMPORAL_TLS_SERVER_CA_CERT_PATH: file(party, 'ca.pem', dir),
});

describe('the compose stack certificates (docker/temporal-certs.sh)', () => {
  test('a CA, a server certificate and a client certificate per caller that openssl verify accepts, each for its purpose', async () => {
    const ca = file('ca', 'ca.pem');
    for (const host of ['temporal', 'localhost']) {
      expect(await opensslVerify(ca, file('temporal', 'cert.pem'), 'sslserver', host)).toMatchObject({ ok: true });
    }
    expect(await opensslVerify(ca, file('temporal', 'cert.pem'), 'sslserver', 'elsewhere')).toMatchObject({ ok: false });
    for (const party of ['forge', 'ui', 'operator']) {
      expect(await opensslVerify(ca, file(party, 'cert.pem'), 'sslclient')).toMatchObject({ ok: true });
      expect(await opensslVerify(ca, file(party, 'cert.pem'), 'sslserver')).toMatchObject({ ok: false });
      // Another stack's CA does not vouch for them.
      expect(await opensslVerify(file('ca', 'ca.pem', other), file(party, 'cert.pem'), 'sslclient')).toMatchObject({ ok: false });
      // What a party is handed as its CA is the stack's CA itself.
      expect(readFileSync(file(party, 'ca.pem'), 'utf8')).toBe(readFileSync(ca, 'utf8'));
    }
    for (const party of STACK_CERT_PARTIES) {
      const key = party === 'ca' ? file('ca', 'ca.key') : file(party, 'key.pem');
      expect({ party, mode: statSync(key).mode & 0o777 }).toEqual({ party, mode: 0o600 });
    }
  });

  test('a second run keeps every certificate; a missing one is issued again by the same CA', async () => {
    const snapshot = () => Object.fromEntries(STACK_CERT_PARTIES.map((p) => [p, readFileSync(file(p, p === 'ca' ? 'ca.pem' : 'cert.pem'))]));
    const before = snapshot();
    expect(await runStackCertsScript(certs)).toMatch(/already/);
    expect(snapshot()).toEqual(before);

    unlinkSync(file('ui', 'key.pem'));
    expect(await runStackCertsScript(certs)).toMatch(/issued ui/);
    const after = snapshot();
    expect(after.ui.equals(before.ui)).toBe(false);
    expect({ ...after, ui: null }).toEqual({ ...before, ui: null });
    expect(await opensslVerify(file('ca', 'ca.pem'), file('ui', 'cert.pem'), 'sslclient')).toMatchObject({ ok: true });
  });
});

describe("Forge's connection settings from envconfig's TLS settings", () => {
  test('TEMPORAL_TLS_* paths give the connection the CA, the client certificate and its key', () => {
    const env = { TEMPORAL_ADDRESS: 'temporal:7233', TEMPORAL_NAMESPACE: 'default', ...envconfigTls() };
    const resolved = resolveTemporalConnection({ env });
    expect(resolved).toMatchObject({ address: 'temporal:7233', namespace: 'default' });
    expect(resolved.connectionOptions.tls).toEqual({
      serverNameOverride: undefined,
      serverRootCACertificate: readFileSync(file('forge', 'ca.pem')),
      clientCertPair: { crt: readFileSync(file('forge', 'cert.pem')), key: readFileSync(file('forge', 'key.pem')) },
    });
    const named = resolveTemporalConnection({ env: { ...env, TEMPORAL_TLS_SERVER_NAME: 'temporal' } });
    expect(named.connectionOptions.tls).toMatchObject({ serverNameOverride: 'temporal' });
  });

  test('the same from a profile of the TOML config file (TEMPORAL_CONFIG_FILE, TEMPORAL_PROFILE)', () => {
    const toml = path.join(path.dirname(certs), 'temporal.toml');
    writeFileSync(
      toml,
      [
        '[profile.stack]',
        'address = "temporal.example:7233"',
        'namespace = "agents"',
        '[profile.stack.tls]',
        `client_cert_path = "${file('forge', 'cert.pem')}"`,
        `client_key_path = "${file('forge', 'key.pem')}"`,
        `server_ca_cert_path = "${file('forge', 'ca.pem')}"`,
        'server_name = "temporal"',
        '',
      ].join('\n'),
    );
    const expected = {
      address: 'temporal.example:7233',
      namespace: 'agents',
      connectionOptions: {
        tls: {
          serverNameOverride: 'temporal',
          serverRootCACertificate: readFileSync(file('forge', 'ca.pem')),
          clientCertPair: { crt: readFileSync(file('forge', 'cert.pem')), key: readFileSync(file('forge', 'key.pem')) },
        },
      },
    };
    expect(resolveTemporalConnection({ env: { TEMPORAL_CONFIG_FILE: toml, TEMPORAL_PROFILE: 'stack' } })).toMatchObject(expected);
    expect(resolveTemporalConnection({ env: { TEMPORAL_CONFIG_FILE: toml }, profile: 'stack' })).toMatchObject(expected);
  });
});

describe("the README's connection settings", () => {
  const readme = readFileSync(path.resolve(__dirname, '../../README.md'), 'utf8');

  test('its TOML profile is one envconfig reads strictly, and gives the connection the files it names', () => {
    const block = /```toml\n([\s\S]*?)```/.exec(readme)?.[1];
    expect(block).toBeDefined();
    const toml = block as string;
    // Unknown keys fail a strict read: a misspelt setting in the README would be ignored silently otherwise.
    const strict = loadClientConfigFromToml(Buffer.from(toml), { strict: true });
    const [profile] = Object.keys(strict.profiles);
    expect(strict.profiles[profile].tls).toMatchObject({ clientCert: { path: expect.any(String) } });
    const ours = toml
      .replace(/"[^"]*cert\.pem"/, JSON.stringify(file('forge', 'cert.pem')))
      .replace(/"[^"]*key\.pem"/, JSON.stringify(file('forge', 'key.pem')))
      .replace(/"[^"]*ca\.pem"/, JSON.stringify(file('forge', 'ca.pem')));
    const configFile = path.join(path.dirname(certs), 'readme.toml');
    writeFileSync(configFile, ours);
    const resolved = resolveTemporalConnection({ env: { TEMPORAL_CONFIG_FILE: configFile, TEMPORAL_PROFILE: profile } });
    expect(resolved.connectionOptions.tls).toMatchObject({
      serverRootCACertificate: readFileSync(file('forge', 'ca.pem')),
      clientCertPair: { crt: readFileSync(file('forge', 'cert.pem')), key: readFileSync(file('forge', 'key.pem')) },
    });
  });

  test('every TEMPORAL_* variable it names is one envconfig reads (or the server or Web UI image of compose)', () => {
    const lib = path.dirname(require.resolve('@temporalio/envconfig'));
    const envconfig = readFileSync(path.join(lib, 'envconfig-toml.js'), 'utf8');
    const compose = readFileSync(path.resolve(__dirname, '../../docker-compose.yml'), 'utf8');
    const named = new Set(readme.match(/\bTEMPORAL_[A-Z0-9_]*[A-Z0-9]\b/g) ?? []);
    const unknown = [...named].filter((n) => !envconfig.includes(`'${n}'`) && !compose.includes(`${n}:`));
    expect(unknown).toEqual([]);
  });
});

describe('mTLS against a server that requires client certificates of the stack CA', () => {
  let server: http2.Http2SecureServer;
  let address: string;
  /** The subject CN of the client certificate each call arrived with. */
  const callers: string[] = [];
  let refusedHandshakes = 0;

  beforeAll(async () => {
    server = http2.createSecureServer({
      key: readFileSync(file('temporal', 'key.pem')),
      cert: readFileSync(file('temporal', 'cert.pem')),
      ca: readFileSync(file('temporal', 'ca.pem')),
      requestCert: true,
      rejectUnauthorized: true,
    });
    server.on('tlsClientError', () => refusedHandshakes++);
    server.on('stream', (stream) => {
      const peer = (stream.session?.socket as TLSSocket | undefined)?.getPeerCertificate();
      callers.push(String(peer?.subject?.CN));
      // Any unary call: a gRPC response carrying one empty message (GetSystemInfoResponse with nothing set).
      stream.respond({ ':status': 200, 'content-type': 'application/grpc' }, { waitForTrailers: true });
      stream.on('wantTrailers', () => stream.sendTrailers({ 'grpc-status': '0' }));
      stream.end(Buffer.alloc(5));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    address = `127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    await new Promise((resolve) => server.close(resolve));
  });
  beforeEach(() => {
    callers.length = 0;
    refusedHandshakes = 0;
  });

  // The name compose's callers verify (the server's service name); the test dials it on loopback.
  const dial = () => ({ TEMPORAL_ADDRESS: address, TEMPORAL_TLS_SERVER_NAME: 'temporal' });

  test("Forge's client and worker connections present Forge's certificate and check the server's", async () => {
    const client = await connectClient({ env: { ...dial(), ...envconfigTls() } });
    await client.connection.close();
    const worker = await connectWorkerConnection({ env: { ...dial(), ...envconfigTls() } });
    await worker.connection.close();
    expect(callers.length).toBeGreaterThanOrEqual(2);
    expect(new Set(callers)).toEqual(new Set(['forge-worker']));
  });

  test('without a client certificate, or with one of another CA, the handshake is refused and no call arrives', async () => {
    const { TEMPORAL_TLS_SERVER_CA_CERT_PATH } = envconfigTls();
    const attempts = [
      { ...dial(), TEMPORAL_TLS_SERVER_CA_CERT_PATH },
      { ...dial(), ...envconfigTls('forge', other), TEMPORAL_TLS_SERVER_CA_CERT_PATH },
    ];
    for (const env of attempts) {
      for (const connect of [() => connectClient({ env, connectTimeoutMs: 1_000 }), () => connectWorkerConnection({ env })]) {
        const err = await connect().then(
          () => undefined,
          (e: unknown) => e,
        );
        expect(err).toBeInstanceOf(PlatformUnreachableError);
      }
    }
    expect(callers).toEqual([]);
    expect(refusedHandshakes).toBeGreaterThanOrEqual(attempts.length * 2);
  });

  test("a server whose certificate is not of the caller's CA is refused by Forge", async () => {
    const err = await connectClient({
      env: { ...dial(), ...envconfigTls(), TEMPORAL_TLS_SERVER_CA_CERT_PATH: file('forge', 'ca.pem', other) },
      connectTimeoutMs: 1_000,
    }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(PlatformUnreachableError);
    expect(callers).toEqual([]);
  });
});
