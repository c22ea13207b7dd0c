import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { ForgeClient } from '../../src/client';
import { findFreePort, isPortFree } from '../../src/process/free-port';
import { processesMarkedWith } from '../helpers/processes';
import { cliEnv, FORGE_BIN, ROOT, runForge, runForgeJson, TOOL_FIXTURES } from './run-cli';

/**
 * `forge up` as an operator runs it: the real binary in the foreground with its own FORGE_HOME and ports, no
 * TEMPORAL_ADDRESS and no DATABASE_URL (so the embedded dev server and PGlite). It must print the Web UI address,
 * serve the UI, run deployments, stop everything it started on SIGINT / SIGTERM (exit 0, nothing left, ports free),
 * keep its state across a restart, and not leave the dev server behind even when it is killed with SIGKILL.
 */
interface Up {
  child: ChildProcess;
  home: string;
  port: number;
  uiPort: number;
  uiUrl: string;
  stdout: () => string;
  stderr: () => string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

const started: Up[] = [];
const homes: string[] = [];

function newHome(): string {
  const home = mkdtempSync(path.join(existsSync('/dev/shm') ? '/dev/shm' : tmpdir(), 'forge-up-test-'));
  homes.push(home);
  return home;
}

async function startUp(home: string, port?: number, uiPort?: number): Promise<Up> {
  port ??= await findFreePort();
  uiPort ??= await findFreePort();
  const env = cliEnv({
    FORGE_HOME: home,
    FORGE_AGENT_TOOLS_DIR: path.join(home, 'agent-tools'),
    FORGE_TEMPORAL_PORT: String(port),
    FORGE_UI_PORT: String(uiPort),
  });
  const child = spawn(process.execPath, [FORGE_BIN, 'up'], { env, cwd: ROOT, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (c: Buffer) => (stdout += c.toString()));
  child.stderr!.on('data', (c: Buffer) => (stderr += c.toString()));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal })),
  );
  const up: Up = { child, home, port, uiPort, uiUrl: '', stdout: () => stdout, stderr: () => stderr, exited };
  started.push(up);
  const deadline = Date.now() + 60_000;
  while (!/Web UI: (\S+)/.test(stdout)) {
    if (child.exitCode !== null || child.signalCode !== null) throw new Error(`forge up exited early:\n${stdout}\n${stderr}`);
    if (Date.now() > deadline) throw new Error(`forge up did not print the Web UI address in 60 s:\n${stdout}\n${stderr}`);
    await new Promise((r) => setTimeout(r, 100));
  }
  up.uiUrl = /Web UI: (\S+)/.exec(stdout)![1];
  return up;
}

/** Pids of the live (non-zombie) processes in process group `pgid`. */
function processGroupMembers(pgid: number): number[] {
  const members: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (fields[0] !== 'Z' && fields[0] !== 'X' && Number(fields[2]) === pgid) members.push(Number(entry));
    } catch {
      // exited while we looked
    }
  }
  return members;
}

/** Waits (up to `ms`) until nothing of `up` is left: no process in its group or carrying its FORGE_HOME, both ports free. */
async function expectAllGone(up: Up, ms = 10_000): Promise<void> {
  const deadline = Date.now() + ms;
  const state = async () => ({
    group: processGroupMembers(up.child.pid!),
    marked: processesMarkedWith(up.home).map((p) => p.cmdline),
    grpcPortFree: await isPortFree(up.port),
    uiPortFree: await isPortFree(up.uiPort),
  });
  const clean = { group: [], marked: [], grpcPortFree: true, uiPortFree: true };
  let now = await state();
  while (Date.now() < deadline && JSON.stringify(now) !== JSON.stringify(clean)) {
    await new Promise((r) => setTimeout(r, 200));
    now = await state();
  }
  expect(now).toEqual(clean);
}

/** The same clean stop for SIGINT and SIGTERM: exit 0, it says it stopped, nothing is left. */
async function stopWith(up: Up, signal: 'SIGINT' | 'SIGTERM'): Promise<void> {
  process.kill(up.child.pid!, signal);
  const exit = await up.exited;
  expect({ exit, stderrTail: up.stderr().slice(-300) }).toEqual({ exit: { code: 0, signal: null }, stderrTail: expect.stringContaining('forge: stopped.') });
  expect(up.stderr()).toContain(`forge: ${signal}: stopping`);
  await expectAllGone(up);
}

afterAll(async () => {
  for (const up of started) {
    if (up.child.exitCode === null && up.child.signalCode === null) {
      try {
        process.kill(-up.child.pid!, 'SIGKILL');
      } catch {
        // already gone
      }
    }
    // Whatever still carries this test's FORGE_HOME was started by this test.
    for (const p of processesMarkedWith(up.home)) {
      try {
        process.kill(p.pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
  }
  for (const home of homes) rmSync(home, { recursive: true, force: true });
});

test('forge up: Web UI, a deployment, SIGINT stops everything; a restart keeps tools and runs; SIGTERM stops it too', async () => {
  const home = newHome();
  const first = await startUp(home);
  expect(first.uiUrl).toBe(`http://127.0.0.1:${first.uiPort}`);
  expect(first.stdout()).toContain(`Temporal at 127.0.0.1:${first.port}`);
  const ui = await fetch(first.uiUrl);
  expect(ui.status).toBe(200);
  await ui.arrayBuffer();

  // The deploy command alone is pointed at the dev server forge up started.
  const clientEnv = cliEnv({ TEMPORAL_ADDRESS: `127.0.0.1:${first.port}`, FORGE_HOME: home, FORGE_AGENT_TOOLS_DIR: path.join(home, 'agent-tools') });
  const deployed = await runForgeJson(['deploy', path.join(TOOL_FIXTURES, 'celsius_to_fahrenheit.ts'), '--test-input', '{"celsius":100}'], {
    env: clientEnv,
  });
  expect(deployed.code).toBe(0);
  expect(deployed.json).toMatchObject({ status: 'active', name: 'celsius_to_fahrenheit', version: 1 });
  const workflowId = deployed.json.workflowId as string;
  const called = await runForgeJson(['call', 'celsius_to_fahrenheit', '--input', '{"celsius":0}'], { env: clientEnv });
  expect(called.json).toMatchObject({ ok: true, output: { fahrenheit: 32 } });

  // A newcomer can promote a change at once: forge up seeded $FORGE_HOME/agent-repo from examples/agent-repo.
  const agentRepo = path.join(home, 'agent-repo');
  expect(first.stdout()).toContain(`agent repository (forge promote): ${agentRepo} (new: a copy of examples/agent-repo)`);
  const changed = path.join(home, 'sum.ts');
  writeFileSync(changed, `${readFileSync(path.join(agentRepo, 'src/tools/sum.ts'), 'utf8')}\n// promoted by a newcomer\n`);
  const promoted = await runForgeJson(['promote', '--change', `src/tools/sum.ts=${changed}`, '--message', 'first promotion'], { env: clientEnv });
  expect(promoted.code).toBe(0);
  expect(promoted.json).toMatchObject({ status: 'promoted', branch: 'main', repo: agentRepo, diagnostics: { overall: 'pass' } });
  expect(readFileSync(path.join(agentRepo, 'src/tools/sum.ts'), 'utf8')).toContain('promoted by a newcomer');
  // The repository's plan declares its built-in tools: an agent-authored tool cannot take their names.
  const taken = await runForgeJson(['deploy', path.join(TOOL_FIXTURES, 'celsius_to_fahrenheit.ts'), '--name', 'sum'], { env: clientEnv });
  expect(taken.code).toBe(1);
  expect(taken.json).toMatchObject({ status: 'rejected', verdict: 'refused' });
  expect((taken.json.diagnostics as { message: string }).message).toContain('built-in');

  // A deployment and a migration as a person runs them (progress on stderr, so the CLI queries the run as it goes).
  const shownTool = path.join(home, 'c2f_shown.ts');
  writeFileSync(shownTool, readFileSync(path.join(TOOL_FIXTURES, 'celsius_to_fahrenheit.ts'), 'utf8').replaceAll('celsius_to_fahrenheit', 'c2f_shown'));
  const shown = await runForge(['deploy', shownTool, '--test-input', '{"celsius":100}'], { env: clientEnv });
  expect({ code: shown.code, stderr: shown.stderr }).toMatchObject({ code: 0 });
  expect(shown.stderr).toMatch(/✓ typecheck \(\d+ ms\): no type errors/);
  const migrated = await runForge(['migrate', '--name', 'agent_notes', path.join(ROOT, 'examples', 'agent_notes.sql')], { env: clientEnv });
  expect(migrated.code).toBe(0);
  // Core forwards its warnings through the logger in batches (100 ms).
  await new Promise((r) => setTimeout(r, 500));
  // The SDK's INFO chatter (worker states, webpack's bundle report) is not on forge up's stderr; nor Core's "Query not
  // found" warning (the CLI cancelled its last progress query under the worker), nor a raw colour code: Core's own
  // lines go through Forge's logger, and stderr here is a pipe.
  expect(first.stderr()).not.toMatch(/\[INFO\]|webpack|modules by path/);
  expect(first.stderr()).not.toContain('Query not found');
  expect(first.stderr()).not.toContain('\x1b[');

  await stopWith(first, 'SIGINT');

  // Same FORGE_HOME and ports: the tool and the first run are still there.
  const second = await startUp(home, first.port, first.uiPort);
  const tools = await runForgeJson(['tools'], { env: clientEnv });
  expect(tools.code).toBe(0);
  expect(tools.json.tools).toEqual([
    expect.objectContaining({ name: 'c2f_shown', activeVersion: 1, status: 'active' }),
    expect.objectContaining({ name: 'celsius_to_fahrenheit', activeVersion: 1, status: 'active' }),
  ]);
  const forge = await ForgeClient.connect({ address: `127.0.0.1:${second.port}`, env: {} });
  try {
    const run = await forge.getRun(workflowId);
    expect(run).toMatchObject({ workflowId, status: 'COMPLETED' });
  } finally {
    await forge.close();
  }

  await stopWith(second, 'SIGTERM');
}, 150_000);

test('forge up killed with SIGKILL: the dev server does not outlive it, the ports come free', async () => {
  const up = await startUp(newHome());
  const server = processesMarkedWith(up.home).filter((p) => p.cmdline.includes('start-dev'));
  expect(server).toHaveLength(1);
  process.kill(up.child.pid!, 'SIGKILL');
  expect(await up.exited).toEqual({ code: null, signal: 'SIGKILL' });
  // The dev server is in its own process group; only its parent-death signal can take it down.
  await expectAllGone(up);
}, 90_000);

test('forge up when its gRPC port is taken: one clear sentence, exit 1, nothing left', async () => {
  const home = newHome();
  // Occupy a port with a plain listener that this test owns.
  const blocker = createServer();
  const port = await new Promise<number>((resolve) => blocker.listen(0, '127.0.0.1', () => resolve((blocker.address() as { port: number }).port)));
  try {
    const uiPort = await findFreePort();
    const env = cliEnv({
      FORGE_HOME: home,
      FORGE_AGENT_TOOLS_DIR: path.join(home, 'agent-tools'),
      FORGE_TEMPORAL_PORT: String(port),
      FORGE_UI_PORT: String(uiPort),
    });
    const child = spawn(process.execPath, [FORGE_BIN, 'up'], { env, cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
    expect(code).toBe(1);
    expect(stderr).toContain(`forge: Cannot start the Temporal dev server: the gRPC port 127.0.0.1:${port} is already in use`);
    expect(stderr).not.toMatch(/\n\s+at /);
    expect(processesMarkedWith(home)).toEqual([]);
  } finally {
    blocker.close();
  }
}, 30_000);
