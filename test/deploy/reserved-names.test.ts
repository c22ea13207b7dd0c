import { readFileSync } from 'node:fs';
import path from 'node:path';
import { seedAgentRepo } from '../../src/platform/agent-repo';
import { startTestPlatform, useTemporal, type TestPlatform } from '../helpers/platform';
import { adderTool } from '../helpers/tools';
import { commitByHand } from '../git/fixture';

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

  test('a built-in name the plan gains is reserved from the very next deployment on, and one it loses is free again', async () => {
    const { forge, config } = platform;
    const planFile = path.join(config.promotion.repo, 'forge.verify.json');
    const plan = JSON.parse(readFileSync(planFile, 'utf8')) as { builtinTools: Record<string, string> };
    // A deployment reads the plan's names now, so a reader that reuses them for a while has them in hand.
    expect(await forge.deployTool({ name: 'warm_name', source: adderTool('warm', 'warm_name'), testInput: { a: 1, b: 2 } })).toMatchObject({
      status: 'active',
    });
    // The repository's branch moves (a promotion, or a person) and its plan now declares `soon_builtin`.
    await commitByHand(config.promotion.repo, {
      'forge.verify.json': JSON.stringify({ ...plan, builtinTools: { ...plan.builtinTools, soon_builtin: 'src/tools/soon.ts' } }, null, 2),
    });
    const refused = await forge.deployTool({ name: 'soon_builtin', source: adderTool('soon', 'soon_builtin'), testInput: { a: 1, b: 2 } });
    expect(refused).toMatchObject({
      status: 'rejected',
      verdict: 'refused',
      diagnostics: { message: '"soon_builtin" is the name of a built-in tool; choose another name' },
    });
    // The harm that did not happen: no agent tool of that name is active, for any registry to serve.
    expect((await forge.listTools()).tools.map((t) => t.name)).toEqual(['free_name', 'warm_name']);
    // The plan gives the name up again: the next deployment of it goes through.
    await commitByHand(config.promotion.repo, { 'forge.verify.json': JSON.stringify(plan, null, 2) });
    expect(await forge.deployTool({ name: 'soon_builtin', source: adderTool('soon', 'soon_builtin'), testInput: { a: 1, b: 2 } })).toMatchObject({
      status: 'active',
      version: 1,
    });
  }, 120_000);
});
