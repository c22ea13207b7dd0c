import { existsSync } from 'node:fs';
import path from 'node:path';
import { attackInput, claimedReach, HOSTILE_KINDS, hostileName, hostileSource, reportsIn, VICTIM, VICTIM_OUTPUT, type HostileKind } from './corpus';
import { readActivePointersSync, TEMPORAL_DELETE_LAG_MS, type Snapshot } from './harm';
import { startHostileWorld, type HostileWorld } from './setup';

/**
 * The hostile corpus against a real `forge up` run by `user`: every tool once as a deployment's test run and once
 * through a later registry call (`forge call`, as the platform's user), each case asserting from outside that no harm
 * was done (harm.ts says what is looked at), then a check of the whole against the first snapshot.
 *
 * Each case first asserts that the attack ran (the tool's report is there): a tool that never ran proves nothing.
 */
export function hostileCorpusCases(user: string): void {
  let world: HostileWorld;
  let first: Snapshot;
  /** When the last case that could delete a history ended. */
  let lastDelete = 0;

  beforeAll(async () => {
    world = await startHostileWorld(user, { FORGE_REVERIFY_INTERVAL: '1h' });
    first = await world.watch.snapshot();
  }, 150_000);
  afterAll(async () => {
    await world?.teardown();
  }, 60_000);

  test('the platform is up with every service the corpus goes after, and the victim answers as itself', () => {
    const { urls, x402 } = world.platform;
    // The read API is not required here: the defence may move it off TCP (the http tool then looks for unix sockets in
    // FORGE_HOME); where forge up still names it on TCP, the http tool and the scan go after it there.
    expect({ metrics: !!urls.metrics, ui: !!urls.ui, anvil: !!urls.anvil, token: !!x402.token }).toEqual({ metrics: true, ui: true, anvil: true, token: true });
    expect(JSON.parse(first.victim)).toEqual({ version: 1, output: { ...VICTIM_OUTPUT, credentialLength: expect.any(Number) } });
    expect(first.schedule).toBeDefined();
  });

  const isActive = (name: string) => {
    const active = path.join(world.platform.agentToolsDir, 'active.json');
    return existsSync(active) && name in readActivePointersSync(world.platform.agentToolsDir).tools;
  };

  describe.each(HOSTILE_KINDS.map((k) => [k]))('%s', (kind: HostileKind) => {
    const name = hostileName(kind);

    test(`as a deployment's test run, it does no harm`, async () => {
      const input = attackInput(kind, world.context([`tool-deploy/${name}/`]));
      await world.watch.ensureCanaryWorkflow();
      const before = await world.watch.snapshot();
      try {
        const result = await world.platform.forge.deployTool({ name, source: hostileSource(kind), testInput: input });
        const after = await world.watch.settledSnapshot();
        // The attack ran: its test run printed its report (a run that never started proves nothing).
        const ran = reportsIn(result.diagnostics.sandbox?.stderrTail).length > 0;
        expect(
          ran ? 'the attack ran' : { verdict: result.verdict, message: result.diagnostics.message, stderrTail: result.diagnostics.sandbox?.stderrTail },
        ).toBe('the attack ran');
        expect(world.watch.harm(before, after, JSON.stringify(result), { allowed: [result.workflowId], ownTool: name })).toEqual([]);
        expect(claimedReach(reportsIn(result.diagnostics.sandbox?.stderrTail))).toEqual([]);
      } finally {
        if (kind === 'temporal') lastDelete = Date.now();
        await world.watch.restore(before, name);
      }
    }, 120_000);

    test(`called through the registry (forge call as ${user}), it does no harm`, async () => {
      const input = attackInput(kind, world.context([]));
      if (!isActive(name)) {
        // Its deployment was refused: deployed here with an input that does nothing, so that the call can attack.
        const quiet = await world.platform.forge.deployTool({ name, source: hostileSource(kind), testInput: { ...input, noop: true } });
        expect(quiet).toMatchObject({ status: 'active' });
      }
      await world.watch.ensureCanaryWorkflow();
      const before = await world.watch.snapshot();
      try {
        const call = await world.platform.cli(['call', name, '--input', JSON.stringify(input), '--json'], 90_000);
        const after = await world.watch.settledSnapshot();
        const said = `${call.stdout}\n${call.stderr}`;
        // The attack ran: the call returned the tool's own account of what it managed.
        let answer: { ok?: boolean; error?: string; output?: unknown } = {};
        try {
          answer = JSON.parse(call.stdout) as typeof answer;
        } catch {
          // reported below
        }
        expect(answer.ok ? 'the attack ran' : { answer, stdout: call.stdout.slice(-1_000), stderr: call.stderr.slice(-1_000) }).toBe('the attack ran');
        expect(world.watch.harm(before, after, said)).toEqual([]);
        expect(claimedReach(answer.output)).toEqual([]);
      } finally {
        if (kind === 'temporal') lastDelete = Date.now();
        await world.watch.restore(before);
      }
    }, 120_000);
  });

  test('after the whole corpus: the schedule, the wallet, the victim and its history are as they were at the start', async () => {
    // A history whose delete was accepted is still listed for a while.
    await new Promise((r) => setTimeout(r, Math.max(0, lastDelete + TEMPORAL_DELETE_LAG_MS - Date.now())));
    const last = await world.watch.snapshot();
    const victimRuns = (s: Snapshot) => [...s.workflows.values()].filter((w) => w.workflowId.startsWith(`tool-deploy/${VICTIM}/`));
    expect({ schedule: last.schedule, chain: last.chain, victim: last.victim, victimRuns: victimRuns(last) }).toEqual({
      schedule: first.schedule,
      chain: first.chain,
      victim: first.victim,
      victimRuns: victimRuns(first),
    });
  }, 90_000);
}
