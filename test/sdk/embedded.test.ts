import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { DevServerError, startForge, type EmbeddedForge } from '../../src/index';
import { findFreePort, isPortFree } from '../../src/process/free-port';
import { helperPid } from '../../src/process/spawner';
import { requireTemporalBinary } from '../../src/platform/temporal-binary';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { startTemporal } from '../helpers/platform';
import { processesMarkedWith } from '../helpers/processes';
import { codeBlocks, packAndInstall, ROOT, run, type ConsumerProject } from './packed-package';

/*
 * Issue 14, "An SDK a program can import", second point: a program that embeds Forge (startForge) runs the dev server,
 * the database and the workers in its own process, uses them through the returned client and registry, and closes
 * them, leaving nothing behind: no process, no port, no PGlite lock. The platform is real throughout (the temporal
 * binary setup installed, PGlite, sandboxed tool runs).
 */

const TOOL = 'celsius_to_fahrenheit';
const toolSource = readFileSync(path.join(ROOT, 'examples', `${TOOL}.ts`), 'utf8');
const migrationSql = readFileSync(path.join(ROOT, 'examples', 'agent_notes.sql'), 'utf8');

/** A state directory the sandbox's own users can read (a tool run as one of them loads agent-tools/ from it). */
function scratchHome(prefix: string): string {
  const home = mkdtempSync(path.join(existsSync('/dev/shm') ? '/dev/shm' : tmpdir(), prefix));
  chmodSync(home, 0o755);
  return home;
}

/**
 * The environment an embedded Forge of this suite reads: this process's, on ports of its own, and without
 * TEMPORAL_ADDRESS or DATABASE_URL (CI may set them for other suites): these tests are of the dev server it starts and
 * the PGlite it opens.
 */
async function embeddedEnv(): Promise<{ env: NodeJS.ProcessEnv; port: number; uiPort: number }> {
  const port = await findFreePort();
  const uiPort = await findFreePort();
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    FORGE_TEMPORAL_PORT: String(port),
    FORGE_UI_PORT: String(uiPort),
    FORGE_SANDBOX_CONCURRENCY: '2',
    FORGE_REVERIFY_INTERVAL: 'off',
  };
  delete env.TEMPORAL_ADDRESS;
  delete env.DATABASE_URL;
  delete env.FORGE_METRICS_ADDRESS;
  return { env, port, uiPort };
}

/** This process's live descendants (zombies left out), by pid: what an embedded Forge would leave running. */
function descendants(): Map<number, string> {
  const parentOf = new Map<number, number>();
  const commands = new Map<number, string>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (fields[0] === 'Z' || fields[0] === 'X') continue;
      parentOf.set(Number(entry), Number(fields[1]));
      commands.set(Number(entry), readFileSync(`/proc/${entry}/cmdline`, 'latin1').replace(/\0/g, ' ').trim());
    } catch {
      // exited while we looked
    }
  }
  const found = new Map<number, string>();
  const isOurs = (pid: number): boolean => {
    for (let p = parentOf.get(pid), depth = 0; p !== undefined && depth < 64; p = parentOf.get(p), depth++) {
      if (p === process.pid) return true;
    }
    return false;
  };
  for (const pid of parentOf.keys()) if (isOurs(pid)) found.set(pid, commands.get(pid) ?? '');
  return found;
}

/**
 * Descendants that were not there in `before`, as "pid command" lines, but for two process-wide helpers that any user
 * of these libraries in the process leaves idle for its next call: esbuild's service process (esbuild's own design:
 * it ends with the process; its `stop()` would also break a build the program itself runs) and Forge's spawn helper
 * (src/process/spawner.ts, shared by every git command and sandbox cleanup in the process). Neither keeps the program
 * alive: the packed program below exits on its own after close().
 */
function newDescendants(before: Map<number, string>): string[] {
  const idleHelper = (pid: number, cmd: string) => pid === helperPid() || /\/esbuild --service=/.test(cmd);
  return [...descendants()].filter(([pid, cmd]) => !before.has(pid) && !idleHelper(pid, cmd)).map(([pid, cmd]) => `${pid} ${cmd}`);
}

/** Kills whatever a failed test left marked with `home` (a dev server's command line names its SQLite file there). */
function killMarked(home: string): void {
  for (const p of processesMarkedWith(home)) {
    try {
      process.kill(p.pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
}

describe('startForge: Forge embedded in the program', () => {
  let home: string;
  const lines: string[] = [];

  beforeAll(() => {
    home = scratchHome('forge-embedded-');
  });

  afterAll(() => {
    killMarked(home);
    rmSync(home, { recursive: true, force: true });
  });

  test('starts the dev server, database and workers in this process; deploys, calls, migrates; close() leaves nothing running', async () => {
    const before = descendants();
    const { env, port, uiPort } = await embeddedEnv();
    let forge: EmbeddedForge | undefined;
    try {
      forge = await startForge({ home, agentToolsDir: path.join(home, 'agent-tools'), env, log: (l) => lines.push(l) });
      expect(forge.temporal).toEqual({ address: `127.0.0.1:${port}`, namespace: 'default', uiUrl: `http://127.0.0.1:${uiPort}`, started: true });
      expect(forge.home).toBe(home);

      const deployed = await forge.client.deployTool({ name: TOOL, source: toolSource, testInput: { celsius: 20 } });
      expect(deployed).toMatchObject({ status: 'active', version: 1 });
      await forge.registry.waitFor(TOOL, 1);
      const call = await forge.registry.invoke(TOOL, { celsius: 100 });
      expect(call).toMatchObject({ ok: true, output: { fahrenheit: 212 } });

      const migrated = await forge.client.migrateSchema({ name: 'agent_notes', sql: migrationSql });
      expect(migrated.status).toBe('applied');
      expect((await forge.client.listMigrations()).migrations.map((m) => m.name)).toContain('agent_notes');

      // The client shares the workers' connection, so its starts are eager: the server hands the first workflow task
      // back in the start's response (a start through a separate connection is never eagerly started).
      const probe = await forge.client.temporal.workflow.start('listToolsWorkflow', {
        taskQueue: env.FORGE_TASK_QUEUE_CONTROL ?? 'forge-control',
        workflowId: `embedded-eager-probe-${Date.now()}`,
        args: [],
      });
      expect(probe.eagerlyStarted).toBe(true);
      expect((await probe.result()) as unknown).toMatchObject({ tools: [expect.objectContaining({ name: TOOL, activeVersion: 1 })] });

      // Running: the dev server and the sandbox's spare processes are this process's children.
      expect(newDescendants(before).some((p) => p.includes('start-dev'))).toBe(true);
    } finally {
      await forge?.close();
    }
    await expect(forge.done).resolves.toBeUndefined();
    expect(newDescendants(before)).toEqual([]);
    expect(processesMarkedWith(home)).toEqual([]);
    expect(await isPortFree(port, '127.0.0.1')).toBe(true);
    expect(await isPortFree(uiPort, '127.0.0.1')).toBe(true);
    expect(await forge.registry.invoke(TOOL, { celsius: 1 })).toMatchObject({ ok: false, status: 'closed' });
    await forge.close(); // idempotent
    expect(lines.join('\n')).toContain('forge: workers polling');
  }, 180_000);

  test('a second start on the same home after close opens it again (lock released) and finds the tool and migration', async () => {
    const before = descendants();
    const { env, port } = await embeddedEnv();
    {
      // `await using`: the Forge is closed when the block ends, as close() would.
      await using forge = await startForge({ home, agentToolsDir: path.join(home, 'agent-tools'), env, log: () => undefined });
      expect(forge.registry.get(TOOL)?.version).toBe(1);
      expect(await forge.registry.invoke(TOOL, { celsius: 0 })).toMatchObject({ ok: true, output: { fahrenheit: 32 } });
      expect((await forge.client.listMigrations()).migrations.map((m) => m.name)).toEqual(['agent_notes']);
      // The same content again is the same version, not a new one.
      expect(await forge.client.deployTool({ name: TOOL, source: toolSource, testInput: { celsius: 20 } })).toMatchObject({ status: 'active', version: 1 });
    }
    expect(newDescendants(before)).toEqual([]);
    expect(await isPortFree(port, '127.0.0.1')).toBe(true);
  }, 180_000);

  test('a start that fails (its port taken) throws and leaves nothing running, the database closed again', async () => {
    const before = descendants();
    const { env, port } = await embeddedEnv();
    const { createServer } = await import('node:net');
    const squatter = createServer();
    await new Promise<void>((resolve) => squatter.listen(port, '127.0.0.1', resolve));
    try {
      await expect(startForge({ home, agentToolsDir: path.join(home, 'agent-tools'), env, log: () => undefined })).rejects.toThrow(DevServerError);
    } finally {
      await new Promise((resolve) => squatter.close(resolve));
    }
    expect(newDescendants(before)).toEqual([]);
    // The database it had begun to open is closed again: another start takes the lock.
    const again = await startForge({ home, agentToolsDir: path.join(home, 'agent-tools'), env, log: () => undefined });
    await again.close();
    expect(newDescendants(before)).toEqual([]);
  }, 180_000);
});

describe('startForge with a Temporal that is already running', () => {
  let temporal: TestWorkflowEnvironment | undefined;
  let home: string;

  beforeAll(async () => {
    home = scratchHome('forge-embedded-connect-');
    temporal = await startTemporal();
  }, 120_000);

  afterAll(async () => {
    await temporal?.teardown();
    killMarked(home);
    rmSync(home, { recursive: true, force: true });
  });

  test('connects to it instead of starting a dev server, and leaves it running after close', async () => {
    const before = descendants();
    const { env } = await embeddedEnv();
    const suffix = randomBytes(4).toString('hex');
    // Queues of its own: the server may be one other suites share (TEMPORAL_ADDRESS).
    Object.assign(env, {
      FORGE_TASK_QUEUE_CONTROL: `forge-control-${suffix}`,
      FORGE_TASK_QUEUE_SANDBOX: `forge-sandbox-${suffix}`,
      FORGE_TASK_QUEUE_PROMOTE: `forge-promote-${suffix}`,
    });
    const address = temporal!.connection.options.address;
    const forge = await startForge({ home, agentToolsDir: path.join(home, 'agent-tools'), env, temporal: { address }, log: () => undefined });
    try {
      expect(forge.temporal).toEqual({ address, namespace: 'default', uiUrl: undefined, started: false });
      expect(await forge.client.deployTool({ name: TOOL, source: toolSource, testInput: { celsius: 20 } })).toMatchObject({ status: 'active', version: 1 });
    } finally {
      await forge.close();
    }
    expect(newDescendants(before)).toEqual([]);
    // Still answering: close() stopped only what this Forge started.
    await expect(temporal!.connection.workflowService.describeNamespace({ namespace: 'default' })).resolves.toBeDefined();
  }, 180_000);
});

describe('startForge from the packed package', () => {
  let project: ConsumerProject | undefined;
  let home: string;

  beforeAll(() => {
    home = scratchHome('forge-embedded-packed-');
  });

  afterAll(() => {
    killMarked(home);
    rmSync(home, { recursive: true, force: true });
    if (project) rmSync(project.work, { recursive: true, force: true });
  });

  test("an ES module runs the README's embedded snippet in one process, and exits on its own once it closed Forge", async () => {
    const readme = readFileSync(path.join(ROOT, 'README.md'), 'utf8');
    const snippets = codeBlocks(readme, 'typescript').filter((b) => b.includes('startForge'));
    expect(snippets).toHaveLength(1);
    project = packAndInstall();
    // Compiled as the README's reader would (an ES module under node16, top-level await), then run as .mjs.
    writeFileSync(path.join(project.dir, 'embedded.mts'), snippets[0]);
    const compilerOptions = { strict: true, types: ['node'], target: 'ES2022', lib: ['ES2022'], module: 'node16', outDir: 'out' };
    writeFileSync(path.join(project.dir, 'tsconfig.embedded.json'), JSON.stringify({ compilerOptions, files: ['embedded.mts'] }));
    const tsc = spawnSync(process.execPath, [path.join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', 'tsconfig.embedded.json'], {
      cwd: project.dir,
      encoding: 'utf8',
    });
    expect(tsc.stdout + tsc.stderr).toBe('');

    const { env } = await embeddedEnv();
    // The temporal CLI where a user who ran setup has it: on PATH (the installed package has no .forge/ of its own).
    env.PATH = `${path.dirname(requireTemporalBinary())}${path.delimiter}${env.PATH ?? ''}`;
    env.FORGE_HOME = home;
    env.FORGE_AGENT_TOOLS_DIR = path.join(home, 'agent-tools');
    // From the package's root, where the snippet's examples/ path is; `run` fails unless the program exits 0 in time.
    const output = run(process.execPath, [path.join(project.dir, 'out', 'embedded.mjs')], { cwd: project.packageDir, env, timeoutMs: 150_000 });
    expect(output).toContain('{ fahrenheit: 212 }');
    expect(processesMarkedWith(home)).toEqual([]);
  }, 240_000);
});
