import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { parse } from 'yaml';
import { loadModule, parseSync } from 'libpg-query';
import { CONFIG_ENV_NAMES, loadConfig } from '../../src/config';

interface Service {
  image?: string;
  volumes?: string[];
  build?: unknown;
  command?: string[] | string;
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
    const mount = (db.volumes ?? []).find((v) => v.includes('/docker-entrypoint-initdb.d/'));
    expect(mount).toBeDefined();
    const script = readFileSync(path.join(root, (mount as string).split(':')[0]), 'utf8');
    // psql meta-commands (\connect) are the entrypoint's; the rest must be SQL PostgreSQL parses.
    await loadModule();
    const sql = script.split('\n').filter((l) => !l.startsWith('\\')).join('\n');
    const stmts = parseSync(sql).stmts ?? [];
    const create = stmts.map((s) => s.stmt).find((n) => n !== undefined && 'CreateRoleStmt' in n);
    expect(create).toMatchObject({ CreateRoleStmt: { role: url.username } });
    const options = JSON.stringify(create);
    expect(options).toContain('"defname":"superuser","arg":{"Boolean":{"boolval":false}}');
    expect(script).toMatch(new RegExp(`ALTER DATABASE ${url.pathname.slice(1)} OWNER TO ${url.username}`));
  });
});
