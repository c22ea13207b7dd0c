import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { CONFIG_ENV_NAMES, ConfigError, DEFAULT_BUILTIN_TOOLS, loadConfig } from '../../src/config';

function configError(env: NodeJS.ProcessEnv): ConfigError {
  try {
    loadConfig(env);
  } catch (err) {
    if (err instanceof ConfigError) return err;
    throw err;
  }
  throw new Error('loadConfig accepted the environment');
}

describe('loadConfig', () => {
  test('defaults: embedded PGlite under ./.forge, the dev server ports, the task queues and sandbox limits', () => {
    const config = loadConfig({});
    expect(config.home).toBe(path.resolve('.forge'));
    expect(config.temporal).toEqual({ port: 7233, uiPort: 8233 });
    expect(config.database).toEqual({
      kind: 'pglite',
      dataDir: path.resolve('.forge', 'pgdata'),
      schema: 'public',
    });
    expect(config.agentToolsDir).toBe(path.resolve('agent-tools'));
    expect(config.builtinTools).toEqual([...DEFAULT_BUILTIN_TOOLS]);
    expect(config.taskQueues).toEqual({ control: 'forge-control', sandbox: 'forge-sandbox', promote: 'forge-promote' });
    expect(config.sandbox.concurrency).toBeGreaterThanOrEqual(1);
    expect(config.sandbox.spares).toBe(config.sandbox.concurrency);
    expect(config.sandbox.limits).toEqual({
      maxTimeoutMs: 30_000,
      memoryMb: 512,
      outputBytes: 1024 * 1024,
      resultBytes: 4 * 1024 * 1024,
      sourceBytes: 10 * 1024 * 1024,
      envPassthrough: [],
      maxProcesses: 512,
      userIdBase: 2_100_000_000,
      network: { kind: 'internet' },
    });
    expect(config.migrations).toEqual({
      lockTimeoutMs: 5_000,
      statementTimeoutMs: 60_000,
      coreLockTimeoutMs: 1_000,
      coreLockHoldMs: 2_000,
      lockWaitMs: 600_000,
    });
  });

  test('DATABASE_URL selects PostgreSQL; values are parsed and paths resolved', () => {
    const config = loadConfig({
      FORGE_HOME: '/srv/forge',
      DATABASE_URL: 'postgres://forge:pw@db:5432/forge',
      FORGE_SCHEMA: 'forge',
      FORGE_BUILTIN_TOOLS: 'search, fetch_page',
      FORGE_SANDBOX_ENV_PASSTHROUGH: 'LANG,TZ',
      FORGE_SANDBOX_CONCURRENCY: '3',
      FORGE_TEMPORAL_PORT: '7300',
      FORGE_UI_PORT: '8300',
    });
    expect(config.database).toEqual({ kind: 'postgres', url: 'postgres://forge:pw@db:5432/forge', schema: 'forge' });
    // Added to Forge's defaults, never instead of them (issue 24: `shell` deployed once a list replaced them).
    expect(config.builtinTools).toEqual([...DEFAULT_BUILTIN_TOOLS, 'search', 'fetch_page']);
    expect(loadConfig({ FORGE_BUILTIN_TOOLS: 'shell,search' }).builtinTools).toEqual([...DEFAULT_BUILTIN_TOOLS, 'search']);
    expect(config.sandbox.limits.envPassthrough).toEqual(['LANG', 'TZ']);
    expect(config.sandbox.concurrency).toBe(3);
    expect(config.sandbox.spares).toBe(3); // one per slot unless FORGE_SANDBOX_SPARES says otherwise
    expect(loadConfig({ FORGE_SANDBOX_CONCURRENCY: '3', FORGE_SANDBOX_SPARES: '0' }).sandbox.spares).toBe(0);
    expect(config.temporal).toEqual({ port: 7300, uiPort: 8300 });
  });

  test('an empty FORGE_BUILTIN_TOOLS still reserves the defaults; blank numeric values take the default', () => {
    const config = loadConfig({ FORGE_BUILTIN_TOOLS: '', FORGE_SANDBOX_MEMORY_MB: ' ' });
    expect(config.builtinTools).toEqual([...DEFAULT_BUILTIN_TOOLS]);
    expect(config.builtinTools).toEqual(expect.arrayContaining(['shell', 'read_file', 'write_file', 'http_fetch', 'deploy_tool']));
    expect(config.sandbox.limits.memoryMb).toBe(512);
    expect(loadConfig({ FORGE_SANDBOX_NETWORK: 'none' }).sandbox.limits.network).toEqual({ kind: 'none' });
    expect(loadConfig({ FORGE_SANDBOX_NETWORK: 'api.example.com, example.org:443' }).sandbox.limits.network).toEqual({
      kind: 'allow',
      hosts: [{ host: 'api.example.com' }, { host: 'example.org', port: 443 }],
    });
    expect(() => loadConfig({ FORGE_SANDBOX_NETWORK: 'example.org:99999' })).toThrow(/FORGE_SANDBOX_NETWORK.*not a host or host:port/);
  });

  test.each([
    ['FORGE_TEMPORAL_PORT', 'abc'],
    ['FORGE_TEMPORAL_PORT', '70000'],
    ['FORGE_UI_PORT', '7233'],
    ['FORGE_SANDBOX_CONCURRENCY', '0'],
    ['FORGE_SANDBOX_SPARES', '-1'],
    ['FORGE_SANDBOX_MAX_TIMEOUT_MS', '-5'],
    ['FORGE_SANDBOX_MEMORY_MB', '1.5'],
    ['FORGE_SANDBOX_MAX_PROCESSES', '0'],
    ['FORGE_SANDBOX_UID_BASE', '-1'],
    ['FORGE_SANDBOX_UID_BASE', '4294967295'],
    ['FORGE_BUILTIN_TOOLS', 'ok,Not-OK'],
    ['FORGE_SANDBOX_ENV_PASSTHROUGH', 'PATH,1BAD'],
    ['FORGE_SCHEMA', 'Robert"; DROP'],
    ['DATABASE_URL', 'mysql://root@db/forge'],
    ['FORGE_API_TOKEN', 'short'],
  ])('%s=%j is a ConfigError naming the variable', (name, value) => {
    const err = configError({ [name]: value });
    expect(err.variable).toBe(name);
    expect(err.message).toContain(name);
  });

  test('FORGE_REVERIFY_INTERVAL: a duration makes the schedule run that often; off leaves the schedule alone', () => {
    expect(loadConfig({ FORGE_REVERIFY_INTERVAL: '30m' }).reverify).toMatchObject({ intervalMs: 1_800_000, schedule: true });
    expect(loadConfig({}).reverify).toMatchObject({ intervalMs: 3_600_000, schedule: true });
    expect(loadConfig({ FORGE_REVERIFY_INTERVAL: 'off' }).reverify).toMatchObject({ schedule: false });
    expect(() => loadConfig({ FORGE_REVERIFY_INTERVAL: 'sometimes' })).toThrow(ConfigError);
  });

  test('a bad DATABASE_URL is reported without echoing it (it may hold a password)', () => {
    const err = configError({ DATABASE_URL: 'http://user:hunter2@db/forge' });
    expect(err.message).not.toContain('hunter2');
  });

  test("FORGE_API_TOKEN: the read API's token, validated and never echoed; no secret may be passed to tools", () => {
    expect(loadConfig({}).readApi).toEqual({ address: '127.0.0.1:0', token: undefined });
    expect(loadConfig({ FORGE_API_TOKEN: 'a'.repeat(32), FORGE_API_ADDRESS: 'off' }).readApi).toEqual({ token: 'a'.repeat(32) });
    expect(configError({ FORGE_API_TOKEN: 'hunter2 with spaces' }).message).not.toContain('hunter2');
    // FORGE_MCP_TOKEN alike (issue 25: an invalid one was echoed back), too short or with a space, nor in the cause.
    for (const token of ['hunter2short', 'hunter2 with spaces, long enough']) {
      const err = configError({ FORGE_MCP_TOKEN: token });
      expect(err.variable).toBe('FORGE_MCP_TOKEN');
      expect(err.message).toContain('value hidden');
      expect(JSON.stringify({ message: err.message, cause: err.cause, stack: err.stack })).not.toContain('hunter2');
    }
    for (const name of ['DATABASE_URL', 'FORGE_API_TOKEN', 'FORGE_MCP_TOKEN', 'TEMPORAL_API_KEY']) {
      expect(configError({ FORGE_SANDBOX_ENV_PASSTHROUGH: `LANG,${name}` }).message).toContain(`may not pass ${name}`);
    }
  });

  test('x402: a conservative spend policy by default; the wallet key validated, never shown, and kept from tools', () => {
    const defaults = loadConfig({}).x402;
    expect(defaults.policy).toEqual({ maxPerPayment: 1_000_000n, dailyBudget: 10_000_000n, allowedPayees: [], allowedNetworks: [], allowedAssets: [] });
    expect(defaults.walletKey()).toBeUndefined();
    expect(defaults.dev).toBe(false);
    const key = `0x${'ab'.repeat(32)}`;
    const config = loadConfig({ FORGE_X402_WALLET_KEY: key, FORGE_X402_ALLOWED_ASSETS: '0x' + 'C0'.repeat(20) });
    expect(config.x402.walletKey()).toBe(key);
    expect(config.x402.policy.allowedAssets).toEqual(['0x' + 'c0'.repeat(20)]);
    const bad = configError({ FORGE_X402_WALLET_KEY: 'hunter2-not-a-key' });
    expect(bad.variable).toBe('FORGE_X402_WALLET_KEY');
    expect(bad.message).not.toContain('hunter2');
    expect(configError({ FORGE_X402_WALLET_KEY: key, FORGE_X402_WALLET_KEY_FILE: '/k' }).message).toContain('set one');
    expect(configError({ FORGE_SANDBOX_ENV_PASSTHROUGH: 'HOME,FORGE_X402_WALLET_KEY' }).message).toContain('may not pass FORGE_X402_WALLET_KEY');
    expect(configError({ FORGE_X402_MAX_PER_PAYMENT: '0.5' }).message).toContain('whole number of base units');
  });

  test('CONFIG_ENV_NAMES is exactly what loadConfig reads', () => {
    const read = new Set<string>();
    const env = new Proxy({} as NodeJS.ProcessEnv, {
      get(_target, key) {
        if (typeof key === 'string') read.add(key);
        return undefined;
      },
    });
    loadConfig(env);
    expect([...read].sort()).toEqual([...CONFIG_ENV_NAMES].sort());
  });

  test("every variable loadConfig reads is in the README's table", () => {
    const readme = readFileSync(path.join(__dirname, '..', '..', 'README.md'), 'utf8');
    const missing = CONFIG_ENV_NAMES.filter((name) => !new RegExp(`^\\|[^\\n]*\`${name}\``, 'm').test(readme));
    expect(missing).toEqual([]);
  });

  test('loadConfig is the only reader of the environment', () => {
    // What may read process.env besides config.ts, and why: none of it is Forge's configuration.
    const allowed: Record<string, string> = {
      'client.ts': 'hands process.env to loadConfig (or the environment the caller gave)',
      'platform/embedded.ts': 'the same, for startForge()',
      'platform/temporal-binary.ts': 'PATH, to find the temporal CLI',
      'commands/up.ts': "TEMPORAL_ADDRESS: Temporal's own variable (envconfig), which says whether to start a dev server",
      'commands/connect.ts': 'the proxy variables gRPC honours, which make a direct TCP probe meaningless',
      'sandbox/run.ts': 'the values of FORGE_SANDBOX_ENV_PASSTHROUGH, passed on to the tool',
      'sandbox/pool.ts': 'the same values, to tell whether a spare was started with the current ones',
      'git/exec.ts': 'passes the environment on to git, less the GIT_* variables that would redirect it',
    };
    const src = path.join(__dirname, '..', '..', 'src');
    const files = (dir: string): string[] =>
      readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? files(path.join(dir, e.name)) : [path.join(dir, e.name)]));
    const readers = files(src)
      .filter((f) => /\.(ts|cjs)$/.test(f) && /process\.env\b/.test(readFileSync(f, 'utf8')))
      .map((f) => path.relative(src, f))
      .filter((f) => f !== 'config.ts' && !(f in allowed));
    expect(readers).toEqual([]);
  });
});
