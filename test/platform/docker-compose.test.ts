import { execFile } from 'node:child_process';
import { createPublicKey, X509Certificate } from 'node:crypto';
import { chmodSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { parse } from 'yaml';
import { loadModule, parseSync } from 'libpg-query';
import { CONFIG_ENV_NAMES, loadConfig } from '../../src/config';
import { FORGE_SEARCH_ATTRIBUTES } from '../../src/contract/search-attributes';
import { issueStackCerts, opensslVerify, STACK_CERTS_SCRIPT } from '../helpers/stack-certs';

/** A volume in the long syntax (the short one is `source:target[:ro]`). */
interface VolumeMount {
  type?: string;
  source?: string;
  target?: string;
  read_only?: boolean;
  volume?: { subpath?: string };
}

interface Service {
  image?: string;
  volumes?: (string | VolumeMount)[];
  build?: unknown;
  entrypoint?: string[] | string;
  command?: string[] | string;
  depends_on?: Record<string, { condition?: string }> | string[];
  environment?: Record<string, string | number | boolean | null> | string[];
}

const root = path.resolve(__dirname, '../..');
const compose = parse(readFileSync(path.join(root, 'docker-compose.yml'), 'utf8')) as {
  services: Record<string, Service>;
};

/** The TEMPORAL_* names @temporalio/envconfig reads, taken from its compiled source so the test follows upgrades. */
function envconfigNames(): { exact: Set<string>; prefixes: string[] } {
  const lib = path.dirname(require.resolve('@temporalio/envconfig'));
  const names = new Set<string>();
  for (const file of readdirSync(lib).filter((f) => f.endsWith('.js'))) {
    for (const match of readFileSync(path.join(lib, file), 'utf8').matchAll(/TEMPORAL_[A-Z_]+/g)) names.add(match[0]);
  }
  const prefixes = [...names].filter((n) => n.endsWith('_'));
  return { exact: new Set([...names].filter((n) => !n.endsWith('_'))), prefixes };
}

function environmentOf(service: Service): Record<string, string> {
  const env = service.environment ?? {};
  if (Array.isArray(env)) {
    return Object.fromEntries(env.map((entry) => [entry.split('=')[0], entry.slice(entry.indexOf('=') + 1)]));
  }
  return Object.fromEntries(Object.entries(env).map(([k, v]) => [k, v === null ? '' : String(v)]));
}

const forgeServices = Object.entries(compose.services).filter(([, s]) => s.build !== undefined);

describe('docker-compose.yml', () => {
  test('has Temporal on PostgreSQL, the Web UI, a database for Forge and Forge workers built from the repo', () => {
    const images = Object.values(compose.services).map((s) => s.image ?? '');
    expect(images.some((i) => i.startsWith('temporalio/server:'))).toBe(true);
    expect(images.some((i) => i.startsWith('temporalio/ui:'))).toBe(true);
    expect(images.filter((i) => i.startsWith('postgres:')).length).toBeGreaterThanOrEqual(2);
    expect(forgeServices.length).toBeGreaterThanOrEqual(1);
    for (const [, service] of forgeServices) {
      expect([service.command].flat().join(' ')).toMatch(/bin\/forge\.js worker/);
    }
    expect(readFileSync(path.join(root, 'Dockerfile'), 'utf8')).toMatch(/bin\/forge\.js", "worker"/);
  });

  test.each(forgeServices)('every FORGE_*, DATABASE_URL and TEMPORAL_* name on %s is read', (_name, service) => {
    const env = environmentOf(service);
    const temporal = envconfigNames();
    const unknown = Object.keys(env).filter((name) => {
      if (name.startsWith('TEMPORAL_')) {
        return !temporal.exact.has(name) && !temporal.prefixes.some((p) => name.startsWith(p));
      }
      if (name.startsWith('FORGE_') || name === 'DATABASE_URL') {
        return !(CONFIG_ENV_NAMES as readonly string[]).includes(name);
      }
      return false;
    });
    expect(unknown).toEqual([]);
  });

  test.each(forgeServices)('%s sets what a scaled-out worker needs, valid for loadConfig', (_name, service) => {
    const env = environmentOf(service);
    for (const required of ['TEMPORAL_ADDRESS', 'TEMPORAL_NAMESPACE', 'DATABASE_URL', 'FORGE_HOME']) {
      expect(env[required]).toBeTruthy();
    }
    const config = loadConfig(env);
    // Several replicas share one database: PGlite (one process) would be wrong here.
    expect(config.database.kind).toBe('postgres');
    const services = Object.keys(compose.services);
    expect(services).toContain(env.TEMPORAL_ADDRESS.split(':')[0]);
    expect(services).toContain(new URL(env.DATABASE_URL).hostname);
  });

  test('Forge connects to its database as a role that is no superuser, made by the init script the database runs', async () => {
    const worker = environmentOf(forgeServices[0][1]);
    const url = new URL(worker.DATABASE_URL);
    const db = compose.services[url.hostname];
    const dbEnv = environmentOf(db);
    // The image's POSTGRES_USER is a superuser: Forge must not be it.
    expect(dbEnv.POSTGRES_USER).not.toBe(url.username);
    const mount = (db.volumes ?? []).find((v): v is string => typeof v === 'string' && v.includes('/docker-entrypoint-initdb.d/'));
    expect(mount).toBeDefined();
    const script = readFileSync(path.join(root, (mount as string).split(':')[0]), 'utf8');
    // psql meta-commands (\connect) are the entrypoint's; the rest must be SQL PostgreSQL parses.
    await loadModule();
    const sql = script
      .split('\n')
      .filter((l) => !l.startsWith('\\'))
      .join('\n');
    const stmts = parseSync(sql).stmts ?? [];
    const create = stmts.map((s) => s.stmt).find((n) => n !== undefined && 'CreateRoleStmt' in n);
    expect(create).toMatchObject({ CreateRoleStmt: { role: url.username } });
    const options = JSON.stringify(create);
    expect(options).toContain('"defname":"superuser","arg":{"Boolean":{"boolval":false}}');
    expect(script).toMatch(new RegExp(`ALTER DATABASE ${url.pathname.slice(1)} OWNER TO ${url.username}`));
  });
});

/*
 * The compose file as a whole and the mTLS between Temporal's frontend and its callers. No Docker engine runs here:
 * the file is checked against the Compose Specification's schema (test/platform/fixtures/compose-spec.json), the
 * certificate script runs with this machine's openssl, and every TLS path a service is given is followed through its
 * mounts of the certificate volume to the file the script issued there.
 */
const TLS_VOLUME = 'temporal-tls';
const CERTS_SCRIPT = `./${path.relative(root, STACK_CERTS_SCRIPT)}`;

function mountsOf(service: Service): { source: string; target: string; subpath: string; readOnly: boolean }[] {
  return (service.volumes ?? []).map((volume) => {
    if (typeof volume === 'string') {
      const [source, target, mode] = volume.split(':');
      return { source, target, subpath: '', readOnly: mode === 'ro' };
    }
    const { source = '', target = '', read_only: readOnly = false } = volume;
    return { source, target, subpath: volume.volume?.subpath ?? '', readOnly };
  });
}

const tlsMounts = (service: Service) => mountsOf(service).filter((m) => m.source === TLS_VOLUME);

/** The file a path in the service's container is, in the volume the script filled; undefined when no mount holds it. */
function inVolume(service: Service, containerPath: string | undefined, certs: string): string | undefined {
  if (!containerPath) return undefined;
  for (const mount of tlsMounts(service)) {
    const rel = path.posix.relative(mount.target, containerPath);
    if (!rel.startsWith('..') && !path.posix.isAbsolute(rel)) return path.join(certs, mount.subpath, rel);
  }
  return undefined;
}

function filesUnder(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? filesUnder(path.join(dir, e.name)) : [path.join(dir, e.name)]));
}

const dependsOn = (service: Service): Record<string, string> =>
  Array.isArray(service.depends_on)
    ? Object.fromEntries(service.depends_on.map((d) => [d, 'service_started']))
    : Object.fromEntries(Object.entries(service.depends_on ?? {}).map(([d, v]) => [d, v.condition ?? 'service_started']));

/** The key's public half equals the certificate's: the pair a service is given belongs together. */
function keyMatchesCert(keyFile: string, certFile: string): boolean {
  const fromKey = createPublicKey(readFileSync(keyFile)).export({ type: 'spki', format: 'der' });
  const fromCert = new X509Certificate(readFileSync(certFile)).publicKey.export({ type: 'spki', format: 'der' });
  return fromKey.equals(fromCert);
}

const [generatorName, generator] = Object.entries(compose.services).find(([, s]) => mountsOf(s).some((m) => m.source === CERTS_SCRIPT)) ?? ['', {}];
const [serverName, server] = Object.entries(compose.services).find(([, s]) => s.image?.startsWith('temporalio/server:')) ?? ['', {}];
/** Every service that dials the frontend: its TEMPORAL_ADDRESS names the server's service. */
const callers = Object.entries(compose.services).filter(([name, s]) => name !== serverName && environmentOf(s).TEMPORAL_ADDRESS?.split(':')[0] === serverName);
// The Web UI's server has its own names for the same settings (its config template); everything else that calls the
// frontend here (Forge, the temporal CLI of admin-tools) reads envconfig's.
const UI_TLS = { cert: 'TEMPORAL_TLS_CERT', key: 'TEMPORAL_TLS_KEY', ca: 'TEMPORAL_TLS_CA' };
const ENVCONFIG_TLS = {
  cert: 'TEMPORAL_TLS_CLIENT_CERT_PATH',
  key: 'TEMPORAL_TLS_CLIENT_KEY_PATH',
  ca: 'TEMPORAL_TLS_SERVER_CA_CERT_PATH',
};
const tlsNamesOf = (service: Service) => (service.image?.startsWith('temporalio/ui:') ? UI_TLS : ENVCONFIG_TLS);

describe('docker-compose.yml as a whole', () => {
  test('is valid under the Compose Specification', () => {
    // ajv 8 comes with the MCP SDK, one of Forge's own dependencies: no second copy for this one test.
    const mcpRequire = createRequire(require.resolve('@modelcontextprotocol/sdk/server/index.js'));
    type Validate = ((data: unknown) => boolean) & { errors?: unknown[] | null };
    const Ajv = (mcpRequire('ajv') as { default: new (options: object) => { compile(schema: object): Validate } }).default;
    // The schema names draft-07 by an https URL ajv does not know; draft-07 is ajv's default anyway.
    const { $schema: _draft, ...schema } = JSON.parse(readFileSync(path.join(__dirname, 'fixtures', 'compose-spec.json'), 'utf8')) as Record<string, unknown>;
    const validate = new Ajv({ strict: false, allErrors: true }).compile(schema);
    const valid = validate(compose);
    expect(validate.errors ?? []).toEqual([]);
    expect(valid).toBe(true);
    // A misspelt key fails it: the schema is strict about what it knows.
    expect(validate({ services: { x: { image: 'a', volumes: [{ type: 'volume', source: 'v', target: '/v', volume: { subpth: 'x' } }] } } })).toBe(false);
  });

  test("registers exactly the search attributes in src/contract/search-attributes.ts, each with the code's type", async () => {
    const [, setup] = Object.entries(compose.services).find(([, s]) => [s.command].flat().join('\n').includes('search-attribute create')) ?? [];
    expect(setup).toBeDefined();
    const env = environmentOf(setup as Service);
    const listed = Object.fromEntries(
      (env.SEARCH_ATTRIBUTES ?? '')
        .split(/\s+/)
        .filter(Boolean)
        .map((p) => p.split(':')),
    );
    expect(listed).toEqual(FORGE_SEARCH_ATTRIBUTES);

    // And the service's script creates each one that is missing, with that type: run it against a stand-in `temporal`
    // that logs its arguments and lists the first attribute as already there.
    const dir = mkdtempSync(path.join(tmpdir(), 'forge-compose-sa-'));
    try {
      const [present, ...missing] = Object.keys(FORGE_SEARCH_ATTRIBUTES);
      const log = path.join(dir, 'calls.log');
      writeFileSync(
        path.join(dir, 'temporal'),
        `#!/bin/sh\necho "$*" >> '${log}'\ncase "$*" in *"search-attribute list"*) echo "${present}  Keyword" ;; esac\n`,
      );
      chmodSync(path.join(dir, 'temporal'), 0o755);
      const { entrypoint, command } = setup as Service;
      // Compose writes a literal $ as $$; the shell gets one.
      const argv = [...[entrypoint].flat(), ...[command].flat()].map((a) => String(a).replace(/\$\$/g, '$'));
      await promisify(execFile)(argv[0], argv.slice(1), { env: { ...env, PATH: `${dir}:${process.env.PATH}` } });
      const creates = readFileSync(log, 'utf8')
        .split('\n')
        .filter((l) => l.includes('search-attribute create'));
      expect(creates).toEqual(
        missing.map((name) => `operator search-attribute create -n ${env.TEMPORAL_NAMESPACE} --name ${name} --type ${FORGE_SEARCH_ATTRIBUTES[name]}`),
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('docker-compose.yml: mTLS between the Temporal frontend and its callers', () => {
  let certs: string;
  beforeAll(async () => {
    // The names the compose service issues the server's certificate for; ownership stays this test's.
    const { TLS_SERVER_NAMES } = environmentOf(generator);
    certs = (await issueStackCerts({ TLS_SERVER_NAMES })).dir;
  });
  afterAll(() => rmSync(path.dirname(certs), { recursive: true, force: true }));

  test('one service issues the certificates into the volume, and the rest read it only after it has', () => {
    expect(generatorName).toBeTruthy();
    expect(mountsOf(generator)).toContainEqual(expect.objectContaining({ source: TLS_VOLUME, subpath: '' }));
    expect(Object.keys((compose as { volumes?: object }).volumes ?? {})).toContain(TLS_VOLUME);
    const readers = Object.entries(compose.services).filter(([n, s]) => n !== generatorName && tlsMounts(s).length > 0);
    expect(readers.map(([n]) => n).sort()).toEqual([serverName, ...callers.map(([n]) => n)].sort());
    for (const [name] of readers) {
      // Some chain of depends_on leads to the generator, and whatever waits on the generator waits for it to finish.
      const seen = new Set<string>();
      const queue = [name];
      while (queue.length > 0) {
        const next = queue.shift() as string;
        for (const [dep, condition] of Object.entries(dependsOn(compose.services[next]))) {
          if (dep === generatorName) expect({ [next]: condition }).toEqual({ [next]: 'service_completed_successfully' });
          if (!seen.has(dep)) queue.push(dep);
          seen.add(dep);
        }
      }
      expect({ [name]: seen.has(generatorName) }).toEqual({ [name]: true });
    }
  });

  test('a container holds one private key, its own, read-only; the CA key stays with the generator', () => {
    const subpaths = new Set<string>();
    for (const [name, service] of Object.entries(compose.services)) {
      if (name === generatorName) continue;
      for (const mount of tlsMounts(service)) {
        expect({ name, subpath: mount.subpath, readOnly: mount.readOnly }).toEqual({
          name,
          subpath: expect.stringMatching(/^(?!ca$)[a-z]+$/),
          readOnly: true,
        });
        expect(subpaths.has(mount.subpath)).toBe(false);
        subpaths.add(mount.subpath);
        const keys = filesUnder(path.join(certs, mount.subpath)).filter((f) => readFileSync(f, 'utf8').includes('PRIVATE KEY'));
        expect(keys.map((k) => path.basename(k))).toEqual(['key.pem']);
        expect(statSync(keys[0]).mode & 0o077).toBe(0);
      }
    }
    expect(
      filesUnder(path.join(certs, 'ca'))
        .map((f) => path.basename(f))
        .sort(),
    ).toEqual(['ca.key', 'ca.pem']);
  });

  test('the frontend requires a client certificate of the stack CA and presents one for the name its callers dial', async () => {
    const env = environmentOf(server);
    expect(env.TEMPORAL_TLS_REQUIRE_CLIENT_AUTH).toBe('true');
    const names = [
      'TEMPORAL_TLS_FRONTEND_CERT',
      'TEMPORAL_TLS_FRONTEND_KEY',
      'TEMPORAL_TLS_CLIENT1_CA_CERT',
      'TEMPORAL_TLS_CLIENT2_CA_CERT',
      'TEMPORAL_TLS_SERVER_CERT',
      'TEMPORAL_TLS_SERVER_KEY',
      'TEMPORAL_TLS_SERVER_CA_CERT',
    ];
    const file = Object.fromEntries(names.map((n) => [n, inVolume(server, env[n], certs)]));
    expect(names.filter((n) => file[n] === undefined || !existsSync(file[n] as string))).toEqual([]);
    const f = file as Record<string, string>;
    expect(keyMatchesCert(f.TEMPORAL_TLS_FRONTEND_KEY, f.TEMPORAL_TLS_FRONTEND_CERT)).toBe(true);
    expect(keyMatchesCert(f.TEMPORAL_TLS_SERVER_KEY, f.TEMPORAL_TLS_SERVER_CERT)).toBe(true);
    // The names callers verify: the service name inside the stack, localhost through the published port.
    for (const host of [serverName, env.TEMPORAL_TLS_FRONTEND_SERVER_NAME, 'localhost']) {
      const verdict = await opensslVerify(f.TEMPORAL_TLS_CLIENT1_CA_CERT, f.TEMPORAL_TLS_FRONTEND_CERT, 'sslserver', host);
      expect({ host, ...verdict }).toMatchObject({ host, ok: true });
    }
    // Between its own roles, and from its system worker to the frontend, the server's certificate is client and server.
    const internode = env.TEMPORAL_TLS_INTERNODE_SERVER_NAME;
    expect(await opensslVerify(f.TEMPORAL_TLS_SERVER_CA_CERT, f.TEMPORAL_TLS_SERVER_CERT, 'sslserver', internode)).toMatchObject({ ok: true });
    expect(await opensslVerify(f.TEMPORAL_TLS_CLIENT1_CA_CERT, f.TEMPORAL_TLS_SERVER_CERT, 'sslclient')).toMatchObject({ ok: true });
  });

  test.each(callers)('%s dials the frontend with a client certificate of its own and checks the server', async (_name, service) => {
    const env = environmentOf(service);
    const names = tlsNamesOf(service);
    const file = {
      cert: inVolume(service, env[names.cert], certs),
      key: inVolume(service, env[names.key], certs),
      ca: inVolume(service, env[names.ca], certs),
    };
    expect(Object.entries(file).filter(([, f]) => f === undefined || !existsSync(f))).toEqual([]);
    const { cert, key, ca } = file as Record<keyof typeof file, string>;
    expect(keyMatchesCert(key, cert)).toBe(true);

    const serverEnv = environmentOf(server);
    const serverTrusts = inVolume(server, serverEnv.TEMPORAL_TLS_CLIENT1_CA_CERT, certs) as string;
    expect(await opensslVerify(serverTrusts, cert, 'sslclient')).toMatchObject({ ok: true });
    // A client certificate is no server's: a caller's key cannot pose as the frontend.
    expect(await opensslVerify(serverTrusts, cert, 'sslserver')).toMatchObject({ ok: false });

    // The caller checks the server's certificate against its CA, for the name it dials.
    const dialled = env.TEMPORAL_TLS_SERVER_NAME ?? env.TEMPORAL_ADDRESS.split(':')[0];
    const frontendCert = inVolume(server, serverEnv.TEMPORAL_TLS_FRONTEND_CERT, certs) as string;
    expect(await opensslVerify(ca, frontendCert, 'sslserver', dialled)).toMatchObject({ ok: true });
    // Nothing turns the checks off.
    expect(['false', '0']).not.toContain(env.TEMPORAL_TLS);
    expect(['true', '1']).not.toContain(env.TEMPORAL_TLS_DISABLE_HOST_VERIFICATION);
    if (names === UI_TLS) expect(env.TEMPORAL_TLS_ENABLE_HOST_VERIFICATION).toBe('true');
  });

  test('each caller is a party of its own to the server (its own certificate subject)', () => {
    const subjects = callers.map(([, s]) => {
      const cert = inVolume(s, environmentOf(s)[tlsNamesOf(s).cert], certs) as string;
      return new X509Certificate(readFileSync(cert)).subject;
    });
    expect(new Set(subjects).size).toBe(callers.length);
    expect(callers.map(([n]) => n)).toEqual(expect.arrayContaining(forgeServices.map(([n]) => n)));
  });
});
