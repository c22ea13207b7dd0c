import path from 'node:path';
import { attackInput, claimedReach, HOSTILE_KINDS, hostileSource, reportsIn, type HostileKind } from './corpus';
import { TEMPORAL_DELETE_LAG_MS } from './harm';
import { startHostileWorld, type HostileWorld } from './setup';

/** Where the corpus goes in the agent's repository: mapped by its plan (src/**\/*.ts) to every stage. */
const DIR = 'src/hostile';

/**
 * The agent repository's test file that attacks: each hostile tool's execute, called from a jest test of the agent's
 * own repository, with the inputs of the test's platform; what each returned goes to stdout (the stage's report
 * keeps its tail). It always passes: the attacker wants its change promoted.
 */
function attackingTest(inputs: Record<HostileKind, Record<string, unknown>>): string {
  const imports = HOSTILE_KINDS.map((k) => `import ${k} from './${k}';`).join('\n');
  const calls = HOSTILE_KINDS.map((k) => `  await attack('${k}', () => ${k}.execute(${k}.inputSchema.parse(INPUTS.${k})));`).join('\n');
  return `${imports}

const INPUTS = ${JSON.stringify(inputs, null, 2)};

async function attack(kind: string, run: () => Promise<unknown>): Promise<void> {
  let out: unknown;
  try {
    out = await run();
  } catch (err) {
    out = { threw: String(err) };
  }
  process.stdout.write('HOSTILE-OUTPUT ' + kind + ' ' + JSON.stringify(out).slice(0, 1_400) + '\\n');
}

test('the tools still work', async () => {
${calls}
}, 150_000);
`;
}

/**
 * The corpus from a promotion stage: a change to the agent's repository whose test file does the network, Temporal,
 * file and environment attacks, promoted through the real platform run by `user`; the harm is checked from outside as
 * for the tools (harm.ts), the promotion's own run and its merge into the agent repository excepted.
 */
export function hostilePromotionCases(user: string): void {
  let world: HostileWorld;
  beforeAll(async () => {
    world = await startHostileWorld(user, { FORGE_REVERIFY_INTERVAL: '1h', FORGE_PROMOTE_STAGE_TIMEOUT_MS: '150000' });
  }, 150_000);
  afterAll(async () => {
    await world?.teardown();
  }, 60_000);

  test('a promotion whose test file attacks the platform does no harm', async () => {
    const ctx = world.context(['builtin-promote/']);
    const inputs = Object.fromEntries(HOSTILE_KINDS.map((k) => [k, attackInput(k, ctx)])) as Record<HostileKind, Record<string, unknown>>;
    const changes = [
      ...HOSTILE_KINDS.map((k) => ({ path: `${DIR}/${k}.ts`, content: hostileSource(k) })),
      { path: `${DIR}/hostile.test.ts`, content: attackingTest(inputs) },
    ];
    await world.watch.ensureCanaryWorkflow();
    const before = await world.watch.snapshot();
    try {
      const result = await world.platform.forge.promoteBuiltin({ repo: world.platform.agentRepo, changes, message: 'tools: a few helpers' });
      // A history whose delete the stage's test asked for is removed a while later: wait for it before looking.
      await new Promise((r) => setTimeout(r, TEMPORAL_DELETE_LAG_MS));
      const after = await world.watch.settledSnapshot();
      // The attack ran: the targeted tests' stage ran the test file, which printed what each tool returned.
      const stage = result.diagnostics.stages.find((s) => s.name === 'targetedTests');
      const printed = HOSTILE_KINDS.filter((k) => stage?.stdoutTail.includes(`HOSTILE-OUTPUT ${k} `));
      expect(
        printed.length === HOSTILE_KINDS.length
          ? 'the attack ran'
          : {
              status: result.status,
              failure: result.diagnostics.failure,
              stages: result.diagnostics.stages.map((s) => ({
                name: s.name,
                status: s.status,
                stdout: s.stdoutTail.slice(-1_500),
                stderr: s.stderrTail.slice(-1_500),
              })),
            },
      ).toBe('the attack ran');
      const harm = world.watch.harm(before, after, JSON.stringify(result), {
        allowed: [result.workflowId],
        ownPaths: [`${path.basename(world.platform.agentRepo)}/`],
      });
      expect(harm).toEqual([]);
      expect(claimedReach(reportsIn(stage?.stderrTail))).toEqual([]);
    } finally {
      await world.watch.restore(before);
    }
  }, 300_000);
}
