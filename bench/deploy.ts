import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os, { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { createToolActivities, createToolInnerSteps, type ToolActivityDeps } from '../src/activities/tool-activities';
import { loadConfig } from '../src/config';
import { createToolStore, openDatabase } from '../src/db';
import { toolContentHash } from '../src/contract/hashes';
import { materializeActiveTools, writeToolVersion } from '../src/registry/materialize';
import { compileTool, runSandbox, SandboxPool } from '../src/sandbox';
import { SPARE_REPLACEMENT_DELAY_MS } from '../src/sandbox/pool';
import { PreloadSet } from '../src/sandbox/preload';
import { byHandCpuMs } from './by-hand';
import { floorRunner } from './floor';
import { cpuSplitSince, machineCpuMs, machineQuiet, p50p95, processTreeCpuMs, percentile, reapedChildrenCpuMs, round, rssMib, statsRow, timeMs } from './stats';
import { startPlatformProcess } from './platform';
import type { Bench } from './types';
import { startNoopWorkflow } from './noop';
import { ToolRegistry } from '../src/registry';

const RUNS = Number(process.env.BENCH_RUNS ?? 30);
const BURST = Number(process.env.BENCH_BURST ?? 100);

const zodTool = (name: string, variant: number) => `import { z } from 'zod';
export default {
  name: '${name}',
  description: 'Converts Celsius to Fahrenheit (variant ${variant}).',
  inputSchema: z.object({ celsius: z.number() }),
  async execute(input: { celsius: number }) { return { fahrenheit: input.celsius * 9 / 5 + 32 + ${variant} * 0 }; },
};`;

/**
 * Deployment of a zod tool three ways, interleaved in one run: durable (client start → active, through Temporal),
 * Forge's direct in-process pipeline (the same steps, no Temporal), and the bare floor (fork a child that imports the
 * same compiled tool, runs it once and reports over IPC). Then a burst of deployments submitted at once.
 */
export const deployBench: Bench = {
  name: 'deploy',
  description: `tool deployment: durable vs direct vs floor (${RUNS} runs each), and a burst of ${BURST}`,
  async run() {
    // Durable: `forge up` in its own process, this process a client, as an agent uses Forge. Direct: the same steps
    // in this process, on a database of its own.
    const { config, forge, pid, address, stop } = await startPlatformProcess('deploy');
    const noop = await startNoopWorkflow(address);
    const directHome = mkdtempSync(path.join(existsSync('/dev/shm') ? '/dev/shm' : tmpdir(), 'forge-bench-direct-'));
    const directConfig = loadConfig({ FORGE_HOME: directHome, FORGE_AGENT_TOOLS_DIR: path.join(directHome, 'agent-tools') });
    const database = await openDatabase(directConfig);
    const store = createToolStore(database);
    // The direct pipeline's sandbox step keeps spares started as the worker's does (same configuration).
    const directPool =
      config.sandbox.spares > 0
        ? new SandboxPool(config.sandbox.limits, config.sandbox.spares, {
            preload: new PreloadSet(config.sandbox.preload.packages, config.sandbox.preload.max),
          })
        : undefined;
    try {
      // The direct pipeline: the very activity functions the workflow runs, called in order, with the sandbox in place
      // of the sandbox activity (which needs an activity context), begun beside the type check as the worker does.
      const deps: ToolActivityDeps = {
        store,
        builtinTools: config.builtinTools,
        maxSourceBytes: config.sandbox.limits.sourceBytes,
        writeVersionFiles: async (row) => void (await writeToolVersion(directConfig.agentToolsDir, row)),
        publish: async () => {
          const index = await materializeActiveTools(store, directConfig.agentToolsDir);
          return { generation: index.generation, tools: Object.keys(index.tools).length };
        },
        sandbox: { taskQueue: config.taskQueues.sandbox, maxTimeoutMs: config.sandbox.limits.maxTimeoutMs },
      };
      const steps = createToolInnerSteps(deps);
      const activities = createToolActivities(deps, steps);
      const direct = async (variant: number) => {
        const input = { name: 'direct_tool', source: zodTool('direct_tool', variant), testInput: { celsius: 1 } };
        const contentHash = toolContentHash(input);
        await steps.validateDeployment({ ...input, contentHash });
        await steps.compileCheck(input);
        // The test begins beside the type check, as the worker's first step begins it (startTestEarly).
        const tested = runSandbox({ name: input.name, source: input.source, input: input.testInput, limits: config.sandbox.limits }, { pool: directPool });
        await steps.typecheckModule(input);
        const { output: _o, ...verdict } = await tested;
        if (verdict.status !== 'passed') throw new Error(`direct run: ${verdict.status} ${verdict.error}`);
        await steps.commitVersion({ ...input, contentHash, verdict, workflowId: 'bench-direct' });
        await activities.publishTools({ names: [input.name] });
      };
      // How many durable runs the first step ended (their test passed within its wait: one local activity in all).
      let inFirstStep = 0;
      const durable = async (variant: number) => {
        const r = await forge.deployTool({ name: 'durable_tool', source: zodTool('durable_tool', variant), testInput: { celsius: 1 } });
        if (r.status !== 'active') throw new Error(`durable run: ${JSON.stringify(r.diagnostics)}`);
        if (r.diagnostics.stages.find((s) => s.name === 'test')?.summary?.endsWith('(in the first step)')) inFirstStep++;
      };
      const compiled = await compileTool(zodTool('floor_tool', 0), 'floor_tool');
      if (!compiled.ok) throw new Error('floor tool does not compile');
      const floorDir = mkdtempSync(path.join(process.cwd(), '.bench-floor-'));
      writeFileSync(path.join(floorDir, 'tool.mjs'), compiled.code);
      const floor = floorRunner(
        `const { default: tool } = await import(${JSON.stringify(path.join(floorDir, 'tool.mjs'))});\n` + `process.send(await tool.execute({ celsius: 1 }));\n`,
      );

      // The registry an agent holds: this process, the platform's agent-tools/, each call a bounded sandbox process.
      const registry = await ToolRegistry.open({ dir: config.agentToolsDir, limits: config.sandbox.limits, onReloadError: () => undefined });
      const call = async () => {
        const r = await registry.invoke('durable_tool', { celsius: 1 });
        if (!r.ok) throw new Error(`registry call: ${r.status} ${r.error}`);
      };
      for (let i = 0; i < 3; i++) {
        await durable(-1 - i);
        await direct(-1 - i);
        await floor();
        await noop.run();
        await call();
      }
      const floorCpu: number[] = [];
      const samples = { durable: [] as number[], direct: [] as number[], floor: [] as number[], noop: [] as number[], registry: [] as number[] };
      // Each sample starts on a settled machine: the spare a deployment or a call took is replaced in the background,
      // and that boot would otherwise land on whichever sample comes next (the floor's, most of all).
      const settled = () => machineQuiet({ windowMs: 150, share: 0.15, maxMs: 3000 });
      // A sample that took a spare has its replacement boot up to SPARE_REPLACEMENT_DELAY_MS later
      // (src/sandbox/pool.ts): waited out, so that boot lands on no other sample.
      const settledAfterSpare = async () => {
        await sleep(SPARE_REPLACEMENT_DELAY_MS + 50);
        await settled();
      };
      inFirstStep = 0;
      for (let i = 0; i < RUNS; i++) {
        await settledAfterSpare();
        samples.durable.push(await timeMs(() => durable(i)));
        await settledAfterSpare();
        samples.direct.push(await timeMs(() => direct(i)));
        await settledAfterSpare();
        const reaped = reapedChildrenCpuMs();
        samples.floor.push(await timeMs(floor));
        floorCpu.push(reapedChildrenCpuMs() - reaped);
        await settled();
        samples.noop.push(await timeMs(noop.run));
        await settled();
        samples.registry.push(await timeMs(call));
      }
      // Issue 28's floor: what the same tool costs a person who compiles, type-checks and runs it once, cold, by hand
      // (esbuild, tsc --noEmit with Forge's options, node): the median of three.
      const byHand = Array.from({ length: 3 }, () => byHandCpuMs(floorDir, zodTool('floor_tool', 0)));
      const byHandCompile = percentile(
        byHand.map((b) => b.compileMs),
        50,
      );
      const byHandTypecheck = percentile(
        byHand.map((b) => b.typecheckMs),
        50,
      );
      await registry.close();
      rmSync(floorDir, { recursive: true, force: true });
      console.log(statsRow('durable (client → active)', samples.durable) + `   ${inFirstStep} of ${RUNS} ended in their first step`);
      console.log(statsRow('direct in-process pipeline', samples.direct));
      console.log(statsRow('bare floor (fork+import+run)', samples.floor));
      console.log(statsRow('no-op workflow (Temporal)', samples.noop));
      console.log(statsRow('ToolRegistry.invoke', samples.registry));
      const vsDirect = round(percentile(samples.durable, 50) / percentile(samples.direct, 50));
      const vsFloor = round(percentile(samples.durable, 50) / percentile(samples.floor, 50));
      console.log(`durable / direct (p50): ${vsDirect}×  (target ≤ 1.25×)`);
      console.log(`durable / floor (p50):  ${vsFloor}×  (goal ≤ 1.0)`);
      // The bound: the same steps with no Temporal, plus Temporal's own cost of a run that does nothing. A deployment
      // cannot beat it by orchestrating better, only by doing its steps faster.
      const boundVsFloor = round((percentile(samples.direct, 50) + percentile(samples.noop, 50)) / percentile(samples.floor, 50));
      console.log(
        `  bound: (direct + no-op workflow) / floor (p50): ${boundVsFloor}×  (what durable / floor would be if Forge added nothing to Temporal's own run)`,
      );

      const overhead = round((percentile(samples.durable, 50) - percentile(samples.direct, 50)) / percentile(samples.noop, 50));
      const registryVsFloor = round(percentile(samples.registry, 50) / percentile(samples.floor, 50));
      console.log(`(durable − direct) / no-op workflow (p50): ${overhead}  (goal ≤ 1.5)`);
      console.log(`registry call / floor (p50): ${registryVsFloor}×  (goal ≤ 0.25)`);

      // After the samples, before the burst: not worker_rss_idle_mib, which the memory bench reads on an idle restart.
      const rssBefore = rssMib(pid);
      let rssPeak = rssBefore;
      const sampler = setInterval(() => (rssPeak = Math.max(rssPeak, rssMib(pid))), 100);
      const burstCpu = machineCpuMs();
      const burstSplit = processTreeCpuMs(pid);
      const burstStart = performance.now();
      const results = await Promise.all(
        Array.from({ length: BURST }, (_, i) => forge.deployTool({ name: `burst_${i}`, source: zodTool(`burst_${i}`, i), testInput: { celsius: 1 } })),
      );
      const burstMs = performance.now() - burstStart;
      const cpuPerDeploy = round((machineCpuMs() - burstCpu) / BURST, 1);
      const splitAfter = processTreeCpuMs(pid);
      const split = cpuSplitSince(burstSplit, splitAfter, BURST);
      clearInterval(sampler);
      const failed = results.filter((r) => r.status !== 'active').length;
      if (failed > 0) throw new Error(`${failed} of the burst's deployments did not become active`);
      const perSecond = round(BURST / (burstMs / 1000));
      const ceiling = round(config.sandbox.concurrency / (percentile(samples.floor, 50) / 1000));
      console.log(
        `burst of ${BURST} at once: ${round(burstMs / 1000, 1)} s, ${perSecond} deploys/s with sandbox concurrency ${config.sandbox.concurrency}` +
          ` (ceiling set by the floor: ~${ceiling}/s)`,
      );
      const burstVsCeiling = round(perSecond / ceiling);
      console.log(`burst / ceiling: ${burstVsCeiling}  (goal ≥ 1.0); forge up RSS ${rssBefore} MiB before the burst, ${rssPeak} MiB peak in it`);
      // What the cores allow: the machine's CPU per deployment in the burst (every process: the platform, the dev server,
      // the sandboxes) against the floor's own CPU per run. With sandbox slots = cores, the burst can reach the ceiling
      // only if a deployment costs no more CPU than one cold run of the tool.
      const floorCpuMs = round(percentile(floorCpu, 50), 1);
      const cpuBound = round((os.availableParallelism() * 1000) / cpuPerDeploy / ceiling);
      console.log(
        `burst CPU: ${cpuPerDeploy} ms per deployment (all processes) vs ${floorCpuMs} ms for one cold run; the cores allow at most ${cpuBound} of the ceiling`,
      );
      console.log(`  of which (ms per deployment): forge up ${split.map(([name, ms]) => `${name === 'self' ? 'itself' : name} ${ms}`).join(', ')}`);
      const byHandFloor = byHandCompile + byHandTypecheck + floorCpuMs;
      // The machine's CPU per deployment: every process (forge up and its threads, the dev server, the sandboxes and
      // their replacement spares, this client), so an upper bound when anything else runs. forge up's own process tree
      // is printed beside it, but undercounts: a sandbox's CPU shows there only once every process between it and
      // forge up has reaped it.
      const platformCpuPerDeploy = round(
        split.reduce((sum, [, ms]) => sum + ms, 0),
        1,
      );
      const cpuVsFloor = round(cpuPerDeploy / byHandFloor);
      console.log(
        `deployment CPU (all processes) / by hand, cold: ${cpuPerDeploy} / ${round(byHandFloor, 1)} ms = ${cpuVsFloor}  (goal ≤ 1.5; forge up's tree alone ${platformCpuPerDeploy} ms; ` +
          `by hand: esbuild ${byHandCompile}, tsc --noEmit ${byHandTypecheck}, node ${floorCpuMs} ms)`,
      );
      // Where a deployment's wall time goes, step by step (p50 over the burst: steps overlap, so they are not CPU).
      const stageNames = [...new Set(results.flatMap((r) => r.diagnostics.stages.map((st) => st.name)))];
      const stageP50 = stageNames.map((name) => {
        const ms = results.flatMap((r) => r.diagnostics.stages.filter((st) => st.name === name && st.durationMs !== undefined).map((st) => st.durationMs!));
        return `${name} ${round(percentile(ms, 50), 0)}`;
      });
      console.log(`  each step of a burst deployment, p50 ms of wall: ${stageP50.join(', ')}`);
      return {
        deploy_overhead_vs_noop_workflow_p50: overhead,
        deploy_burst_100_vs_ceiling: burstVsCeiling,
        registry_call_vs_floor_p50: registryVsFloor,
        ...p50p95('noop_workflow', samples.noop),
        ...p50p95('registry_call', samples.registry),
        deploy_rss_before_burst_mib: rssBefore,
        worker_rss_burst_mib: rssPeak,
        deploy_durable_vs_direct_p50: vsDirect,
        deploy_durable_vs_floor_p50: vsFloor,
        deploy_durable_vs_floor_bound_p50: boundVsFloor,
        ...p50p95('deploy_durable', samples.durable),
        deploy_durable_in_first_step: inFirstStep,
        ...p50p95('deploy_direct', samples.direct),
        ...p50p95('deploy_floor', samples.floor),
        deploy_burst_100_per_s: perSecond,
        deploy_burst_100_wall_s: round(burstMs / 1000, 2),
        deploy_sandbox_concurrency: config.sandbox.concurrency,
        deploy_burst_cpu_per_deploy_ms: cpuPerDeploy,
        deploy_floor_cpu_p50_ms: floorCpuMs,
        deploy_burst_cpu_bound_vs_ceiling: cpuBound,
        deploy_cpu_vs_floor: cpuVsFloor,
        deploy_platform_cpu_per_deploy_ms: platformCpuPerDeploy,
        deploy_by_hand_cpu_ms: round(byHandFloor, 1),
      };
    } finally {
      await noop.stop();
      await stop();
      await directPool?.close();
      await database.close();
      rmSync(directHome, { recursive: true, force: true });
    }
  },
};
