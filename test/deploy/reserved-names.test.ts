import { readFileSync } from 'node:fs';
import path from 'node:path';
import { seedAgentRepo } from '../../src/platform/agent-repo';
import { startTestPlatform, useTemporal, type TestPlatform } from '../helpers/platform';
import { adderTool } from '../helpers/tools';

/**
 * Issue 24: the names an agent tool may not take are Forge's defaults, FORGE_BUILTIN_TOOLS and the built-ins the agent
 * repository's plan declares, all at once. With the seeded repository's plan the plan's names used to replace the
 * list, and `shell` and `read_file` deployed.
 */
const temporal = useTemporal();

describe('reserved names with the agent repository plan present', () => {
  let platform: TestPlatform;
  beforeAll(async () => {
    // FORGE_BUILTIN_TOOLS names one more name and none of the defaults: they must stay reserved all the same.
    platform = await startTestPlatform(temporal(), 'pglite', { env: { FORGE_BUILTIN_TOOLS: 'house_tool' } });
    // A plan present, as `forge up` leaves it: the seeded copy of examples/agent-repo.
    await seedAgentRepo({ target: platform.config.promotion.repo, identity: platform.config.promotion.identity });
  }, 120_000);
  afterAll(() => platform?.teardown());

  test('with a plan present, every reserved name is refused with the reserved-name verdict; another name deploys', async () => {
    const plan = JSON.parse(readFileSync(path.join(platform.config.promotion.repo, 'forge.verify.json'), 'utf8')) as { builtinTools: Record<string, string> };
    const fromPlan = Object.keys(plan.builtinTools);
    expect(fromPlan).toContain('word_count');
    expect(fromPlan).not.toContain('shell');
    const names = ['shell', 'read_file', 'write_file', 'http_fetch', 'deploy_tool', 'house_tool', 'word_count'];
    for (const name of names) {
      const result = await platform.forge.deployTool({ name, source: adderTool('taken', name), testInput: { a: 1, b: 2 } });
      expect({ name, result }).toMatchObject({
        name,
        result: {
          status: 'rejected',
          verdict: 'refused',
          diagnostics: { stage: 'validate', message: `"${name}" is the name of a built-in tool; choose another name` },
        },
      });
    }
    expect((await platform.forge.listTools()).tools).toEqual([]);
    await expect(platform.forge.deployTool({ name: 'free_name', source: adderTool('free', 'free_name'), testInput: { a: 1, b: 2 } })).resolves.toMatchObject({
      status: 'active',
      version: 1,
    });
  }, 120_000);
});
