import { readFileSync } from 'node:fs';
import { ToolRegistry } from '../../src/registry';
import { readApiTokenFileOf } from '../../src/process/read-api-token';
import { startTestPlatform, useTemporal, type TestPlatform } from '../helpers/platform';

/**
 * Issue 24, "a tool's environment holds none of the worker's": a tool that returns its whole `process.env`, run as a
 * deployment's test (in the worker) and as a registry call, finds none of the variables of the process that runs it:
 * no DATABASE_URL, FORGE_*, TEMPORAL_* or wallet key, and none of their values anywhere, nor the read API's token.
 * The worker here is this test process, given secrets of its own before the platform starts (so the sandbox's spare
 * processes, started with the platform, have had every chance to inherit them).
 */
const temporal = useTemporal();

/** Secrets the worker's process holds, as an operator's environment would. */
const PROBES: Record<string, string> = {
  DATABASE_URL: 'postgres://forge:db-password-probe@127.0.0.1:1/forge',
  FORGE_X402_WALLET_KEY: `0x${'5e'.repeat(32)}`,
  FORGE_API_TOKEN: 'api-token-probe-0123456789abcdef',
  FORGE_MCP_TOKEN: 'mcp-token-probe-0123456789abcdef',
  TEMPORAL_API_KEY: 'temporal-api-key-probe',
  TEMPORAL_NAMESPACE: 'default',
  FORGE_SECRET_PROBE: 'forge-secret-probe',
  AGENT_OPENAI_API_KEY: 'sk-agent-key-probe',
};

/**
 * What the sandbox sets itself for every run (src/sandbox/run.ts), not taken from the worker; PWD is the run's own
 * directory, which the launcher's shell exports for a harness.
 */
const SET_BY_THE_SANDBOX = new Set(['PATH', 'HOME', 'TMPDIR', 'LANG', 'PWD']);

/** The tool: its environment as its output, or as the message of the error it throws (what a failed test reports). */
const envProbe = `import { z } from 'zod';
export default {
  name: 'env_probe',
  description: 'Returns its environment.',
  inputSchema: z.object({ fail: z.boolean() }),
  async execute({ fail }: { fail: boolean }) {
    const env = { ...process.env };
    if (fail) throw new Error('ENV=' + JSON.stringify(env) + '=ENV');
    return { env };
  },
};
`;

describe("a tool's environment", () => {
  let platform: TestPlatform;
  let registry: ToolRegistry;
  const saved: Record<string, string | undefined> = {};
  /** The worker's environment as the tool could have inherited it, and its secrets. */
  let workerEnv: NodeJS.ProcessEnv;
  let secrets: string[];

  beforeAll(async () => {
    for (const [name, value] of Object.entries(PROBES)) {
      saved[name] = process.env[name];
      // CI's own DATABASE_URL (a real PostgreSQL) is kept: it is the worker's secret as much as a probe would be.
      if (name !== 'DATABASE_URL' || process.env.DATABASE_URL === undefined) process.env[name] = value;
    }
    platform = await startTestPlatform(temporal());
    registry = await ToolRegistry.open({ dir: platform.config.agentToolsDir, limits: platform.config.sandbox.limits, pollIntervalMs: 100 });
    workerEnv = { ...process.env };
    secrets = [...Object.values(PROBES), process.env.DATABASE_URL!, platform.home];
  }, 120_000);

  afterAll(async () => {
    await registry?.close();
    await platform?.teardown();
    for (const [name, value] of Object.entries(saved)) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
  });

  /** What of the worker's a tool saw: variables it inherited, secrets it could read in any value. */
  function leaks(toolEnv: Record<string, string>): { inherited: string[]; platformNames: string[]; secretsSeen: string[] } {
    const values = Object.values(toolEnv).join('\n');
    const sameAsWorkers = (name: string) => name !== 'PATH' && name !== 'LANG' && toolEnv[name] === workerEnv[name];
    return {
      // A variable of the worker's, or one the sandbox sets that came out with the worker's value (HOME, PWD).
      inherited: Object.keys(toolEnv).filter((name) => name in workerEnv && (!SET_BY_THE_SANDBOX.has(name) || sameAsWorkers(name))),
      // FORGE_SANDBOX_RUN is the run's own marker (src/sandbox/contained-process.ts), a random value of no use outside it.
      platformNames: Object.keys(toolEnv).filter((name) => /^(DATABASE_URL|PG|FORGE_|TEMPORAL_)/.test(name) && name !== 'FORGE_SANDBOX_RUN'),
      secretsSeen: secrets.filter((secret) => values.includes(secret)),
    };
  }

  test("in a deployment's test (in the worker) and in a registry call: nothing of the worker's", async () => {
    expect(process.env.FORGE_X402_WALLET_KEY).toBe(PROBES.FORGE_X402_WALLET_KEY);
    const token = readFileSync(readApiTokenFileOf(platform.home), 'utf8').trim();
    secrets.push(token);

    const failed = await platform.forge.deployTool({ name: 'env_probe', source: envProbe, testInput: { fail: true } });
    expect(failed).toMatchObject({ status: 'rejected', verdict: 'failed', diagnostics: { stage: 'test' } });
    const reported = /ENV=(\{.*\})=ENV/s.exec(failed.diagnostics.message)?.[1];
    expect(reported).toBeDefined();
    const inTest = JSON.parse(reported!) as Record<string, string>;
    expect(inTest).toMatchObject({ PATH: expect.any(String), HOME: expect.any(String) });
    expect(inTest.HOME).not.toBe(workerEnv.HOME);
    expect(leaks(inTest)).toEqual({ inherited: [], platformNames: [], secretsSeen: [] });

    await expect(platform.forge.deployTool({ name: 'env_probe', source: envProbe, testInput: { fail: false } })).resolves.toMatchObject({ status: 'active' });
    let called = await registry.invoke('env_probe', { fail: false });
    for (let i = 0; i < 50 && !called.ok; i++) {
      await new Promise((r) => setTimeout(r, 100)); // the registry sees the new version a poll later
      called = await registry.invoke('env_probe', { fail: false });
    }
    expect(called).toMatchObject({ ok: true, output: { env: { PATH: expect.any(String) } } });
    const inCall = (called as { output: { env: Record<string, string> } }).output.env;
    expect(leaks(inCall)).toEqual({ inherited: [], platformNames: [], secretsSeen: [] });
  }, 120_000);
});
