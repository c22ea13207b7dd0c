import type { ChildProcess } from 'node:child_process';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { useTemporal } from '../helpers/platform';
import { sleepyTool } from '../helpers/tools';
import { killWorkerHard, startForgeWorker, stopWorker } from './forge-worker';
import { createCellPlatform, within } from './matrix/cell';
import { leftoversIn, processesUnder, readEndState } from './matrix/end-state';
import { git, promotionLeftovers, promotionPaths, seedRepository } from './matrix/promotion';
import { testIf } from '../helpers/skip';

/**
 * Issue 9, load with faults: 50 deployments over 10 tools, 5 migrations and 3 promotions (each changing another
 * built-in tool of one repository, so they race for its `main`) started together while the worker is SIGKILLed twice
 * at random instants (seeded; the seed is printed, FORGE_CHAOS_SEED replays it) and restarted at once. Everything
 * ends, each side effect happened once (one commit on `main` per promotion), and each tool's active version is the
 * newest that passed.
 *
 * Heavy (a minute or more of two busy cores), so it runs in `npm run test:chaos` (and so in .ci/run), not in `npm test`.
 */
const heavy = process.env.FORGE_CHAOS_MATRIX === 'full';
const temporal = useTemporal();

const TOOLS = 10;
const DEPLOYS_PER_TOOL = 5;
const MIGRATIONS = 5;
/** Built-in tools of examples/agent-repo, one promotion each: the changes touch different files and rebase cleanly. */
const PROMOTED = ['src/tools/sum.ts', 'src/tools/slugify.ts', 'src/tools/truncate.ts'];
const promotedLine = (file: string) => `// Promoted under load with faults: ${file}\n`;

/** mulberry32: a small seeded generator, so a failing schedule of kills can be replayed exactly. */
function seeded(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const tool = (name: string, variant: number) => sleepyTool(name, String(variant));

testIf(heavy, 'the chaos matrix only: npm run test:chaos (FORGE_CHAOS_MATRIX=full)')(
  '50 deployments, 5 migrations and 3 promotions at once, the worker killed twice at random: all end, once each, newest active',
  async () => {
    const seed = Number(process.env.FORGE_CHAOS_SEED ?? Math.floor(Math.random() * 2 ** 31));
    const random = seeded(seed);
    const kills = [random() * 6_000 + 1_000, random() * 6_000 + 1_000];
    process.stdout.write(`load with faults: seed ${seed}; kills ${kills.map((k) => `${Math.round(k)} ms`).join(' and ')} apart\n`);
    if (process.env.FORGE_CHAOS_LOAD_REPORT) writeFileSync(process.env.FORGE_CHAOS_LOAD_REPORT, JSON.stringify({ seed, kills }));

    const { home, sandboxTmp, env, forge } = createCellPlatform(temporal(), { env: (h) => ({ FORGE_PROMOTE_WORKTREE_ROOT: promotionPaths(h).worktreeRoot }) });
    const { repo } = promotionPaths(home);
    let worker: ChildProcess | undefined;
    try {
      await seedRepository(repo);
      worker = await startForgeWorker(env);
      const deploys = Array.from({ length: TOOLS * DEPLOYS_PER_TOOL }, (_, i) => {
        const name = `load_${i % TOOLS}`;
        return forge.deployTool({ name, source: tool(name, Math.floor(i / TOOLS)), testInput: { ms: 20 } });
      });
      const migrations = Array.from({ length: MIGRATIONS }, (_, i) =>
        forge.migrateSchema({ name: `load_${i}`, sql: `CREATE TABLE agent_load_${i} (id bigint PRIMARY KEY, note text);` }),
      );
      const promotions = PROMOTED.map((file) =>
        forge.promoteBuiltin({
          repo,
          changes: [{ path: file, content: readFileSync(path.join(repo, file), 'utf8') + promotedLine(file) }],
          message: `load: ${file}`,
        }),
      );
      for (const delay of kills) {
        await new Promise((r) => setTimeout(r, delay));
        await killWorkerHard(worker);
        worker = await startForgeWorker(env);
      }
      const results = await within(300_000, 'the end of every run', Promise.all([Promise.all(deploys), Promise.all(migrations), Promise.all(promotions)]));
      const [deployed, migrated, promoted] = results;
      await stopWorker(worker);
      worker = undefined;

      expect(deployed.filter((r) => r.status !== 'active')).toEqual([]);
      expect(migrated.map((r) => r.status)).toEqual(Array(MIGRATIONS).fill('applied'));
      const state = await readEndState(home, { workflowId: '(none)' });
      const versions = state.toolVersions.map((r) => JSON.parse(r) as { name: string; version: number });
      // Every deployment's version exists once; the versions of a tool are 1..5 without a gap or a repeat.
      expect(versions).toHaveLength(TOOLS * DEPLOYS_PER_TOOL);
      for (let t = 0; t < TOOLS; t++) {
        expect(versions.filter((v) => v.name === `load_${t}`).map((v) => v.version)).toEqual([1, 2, 3, 4, 5]);
      }
      for (const r of deployed) expect(versions).toContainEqual(expect.objectContaining({ name: r.name, version: r.version }));
      // The active version of each tool is its newest, in the database and in agent-tools/active.json.
      const active = state.activeTools.map((r) => JSON.parse(r) as { name: string; version: number });
      expect(active).toEqual(Array.from({ length: TOOLS }, (_, t) => ({ name: `load_${t}`, version: DEPLOYS_PER_TOOL })));
      for (const a of active) expect(state.activeIndex[a.name]).toMatchObject({ version: a.version });
      const events = state.events.map((e) => JSON.parse(e) as { kind: string });
      expect(events.filter((e) => e.kind === 'tool.version_created')).toHaveLength(TOOLS * DEPLOYS_PER_TOOL);
      expect(events.filter((e) => e.kind === 'migration.applied')).toHaveLength(MIGRATIONS);
      expect(state.migrations).toHaveLength(MIGRATIONS);
      expect(state.agentToolsFiles.filter((f) => f.includes('.tmp'))).toEqual([]);
      // Each promotion merged once: main is the base and one commit per promotion, the live checkout holds every change.
      expect(promoted.map((r) => r.status)).toEqual(['promoted', 'promoted', 'promoted']);
      expect((await git(repo, 'log', '--format=%s', 'main')).split('\n').sort()).toEqual(['The example agent', ...PROMOTED.map((f) => `load: ${f}`)].sort());
      for (const file of PROMOTED) expect(readFileSync(path.join(repo, file), 'utf8').endsWith(promotedLine(file))).toBe(true);
      expect(await git(repo, 'status', '--porcelain', '--untracked-files=all')).toBe('');
      expect(await promotionLeftovers({ home })).toEqual([]);
      expect(processesUnder(home)).toEqual([]);
      expect(leftoversIn(sandboxTmp)).toEqual([]);
    } finally {
      if (worker) await stopWorker(worker);
      rmSync(home, { recursive: true, force: true });
    }
  },
  480_000,
);
