import { spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, existsSync, lstatSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { findFreePort } from '../../src/process/free-port';
import { processesMarkedWith } from '../helpers/processes';
import { cliEnv, FORGE_BIN, ROOT, runForgeJson, TOOL_FIXTURES } from './run-cli';

/**
 * Issue 24, "secrets and state private": `forge up` as an operator runs it (the real binary, the embedded dev server,
 * PGlite, FORGE_X402_DEV) creates FORGE_HOME and everything in it, and agent-tools/, for its own user only: no file or
 * directory there that group or other may read, write or enter. A FORGE_HOME an earlier Forge left readable is made
 * private at the next start, which says so. `forge tools` still reads through the read API, with its token.
 */

interface Up {
  child: ChildProcess;
  port: number;
  stdout: () => string;
  stderr: () => string;
  exited: Promise<unknown>;
}

const parent = mkdtempSync(path.join(existsSync('/dev/shm') ? '/dev/shm' : tmpdir(), 'forge-private-state-'));
// Neither exists yet: forge up creates both (agent-tools/ outside FORGE_HOME, as with the default ./agent-tools).
const home = path.join(parent, 'home');
const agentTools = path.join(parent, 'agent-tools');
const started: Up[] = [];

async function startUp(): Promise<Up> {
  const port = await findFreePort();
  const env = cliEnv({
    FORGE_HOME: home,
    FORGE_AGENT_TOOLS_DIR: agentTools,
    FORGE_TEMPORAL_PORT: String(port),
    FORGE_UI_PORT: String(await findFreePort()),
    FORGE_METRICS_ADDRESS: 'off',
    FORGE_X402_DEV: '1',
    FORGE_REVERIFY_INTERVAL: 'off',
    // A deployment's test on the sandbox queue, an activity of its own, which the attempt ledger records in attempts/.
    FORGE_SANDBOX_TEST_HERE: 'off',
  });
  const child = spawn(process.execPath, [FORGE_BIN, 'up'], { env, cwd: ROOT, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (c: Buffer) => (stdout += c.toString()));
  child.stderr!.on('data', (c: Buffer) => (stderr += c.toString()));
  const exited = new Promise((resolve) => child.once('exit', resolve));
  const up: Up = { child, port, stdout: () => stdout, stderr: () => stderr, exited };
  started.push(up);
  const deadline = Date.now() + 90_000;
  while (!stdout.includes('Forge is up.')) {
    if (child.exitCode !== null || child.signalCode !== null) throw new Error(`forge up exited early:\n${stdout}\n${stderr}`);
    if (Date.now() > deadline) throw new Error(`forge up did not come up in 90 s:\n${stdout}\n${stderr}`);
    await new Promise((r) => setTimeout(r, 100));
  }
  return up;
}

async function stop(up: Up): Promise<void> {
  process.kill(up.child.pid!, 'SIGTERM');
  await up.exited;
}

/** Every file and directory under `root` (itself included; symbolic links are not followed) with its permission bits. */
function modesUnder(root: string): { path: string; mode: string }[] {
  const found: { path: string; mode: string }[] = [];
  const visit = (full: string) => {
    // A file the running dev server removes between the listing and here (its SQLite journal) is gone, not shared.
    const st = lstatSync(full, { throwIfNoEntry: false });
    if (!st || st.isSymbolicLink()) return;
    found.push({ path: path.relative(parent, full), mode: (st.mode & 0o7777).toString(8) });
    if (st.isDirectory()) for (const name of readdirSync(full)) visit(path.join(full, name));
  };
  visit(root);
  return found;
}

/** What group or other may do anything with: the list that must be empty. */
const shared = (root: string) => modesUnder(root).filter((e) => (parseInt(e.mode, 8) & 0o077) !== 0);

/** The modes of the files the issue names, where they are. */
function modeOf(...parts: string[]): string {
  return (lstatSync(path.join(...parts)).mode & 0o777).toString(8);
}

/** The `forge-query/...` runs on the dev server of `up`: reads that did not go through the read API. */
async function queryRuns(up: Up): Promise<number> {
  await new Promise((r) => setTimeout(r, 1_000)); // visibility trails a start by a moment
  const connection = await Connection.connect({ address: `127.0.0.1:${up.port}` });
  try {
    let n = 0;
    for await (const _ of new Client({ connection }).workflow.list({ query: 'WorkflowId STARTS_WITH "forge-query/"' })) n++;
    return n;
  } finally {
    await connection.close();
  }
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
  }
  for (const p of processesMarkedWith(home)) {
    try {
      process.kill(p.pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
  rmSync(parent, { recursive: true, force: true });
});

test('forge up creates its state private; a FORGE_HOME left readable is made private at the next start; forge tools uses the token', async () => {
  const clientEnv = () => cliEnv({ TEMPORAL_ADDRESS: `127.0.0.1:${started.at(-1)!.port}`, FORGE_HOME: home, FORGE_AGENT_TOOLS_DIR: agentTools });
  const first = await startUp();
  // A deployment, so that agent-tools/ holds a tool's files and attempts/ was used.
  const deployed = await runForgeJson(['deploy', path.join(TOOL_FIXTURES, 'celsius_to_fahrenheit.ts'), '--test-input', '{"celsius":100}'], {
    env: clientEnv(),
  });
  expect(deployed).toMatchObject({ code: 0, json: { status: 'active', version: 1 } });
  // And a migration, so that PGlite creates files of its own while it runs (a new table's).
  const migrated = await runForgeJson(['migrate', '--name', 'agent_notes', path.join(ROOT, 'examples', 'agent_notes.sql')], { env: clientEnv() });
  expect(migrated).toMatchObject({ code: 0, json: { status: 'applied' } });

  // Everything the issue names, where forge up put it, is its user's alone.
  expect({
    home: modeOf(home),
    pgdata: modeOf(home, 'pgdata'),
    pgVersion: modeOf(home, 'pgdata', 'PG_VERSION'),
    devServerDb: modeOf(home, 'temporal.sqlite'),
    devServerLog: modeOf(home, 'temporal-server.log'),
    attempts: modeOf(home, 'attempts'),
    readApiToken: modeOf(home, 'read-api.token'),
    agentRepo: modeOf(home, 'agent-repo'),
    agentTools: modeOf(agentTools),
    activeIndex: modeOf(agentTools, 'active.json'),
  }).toEqual({
    home: '700',
    pgdata: '700',
    pgVersion: '600',
    devServerDb: '600',
    devServerLog: '600',
    attempts: '700',
    readApiToken: '600',
    agentRepo: '700',
    agentTools: '700',
    activeIndex: '600',
  });
  // And nothing else under them either (PGlite's files, git's objects, the tool's source and module, ...).
  expect(modesUnder(home).length).toBeGreaterThan(500);
  expect(shared(home)).toEqual([]);
  expect(shared(agentTools)).toEqual([]);
  expect(first.stderr()).not.toContain('could read or enter');

  // `forge tools` reads through the read API, with the token it found under FORGE_HOME: no query run.
  const tools = await runForgeJson(['tools'], { env: clientEnv() });
  expect(tools).toMatchObject({ code: 0, json: { tools: [expect.objectContaining({ name: 'celsius_to_fahrenheit', activeVersion: 1 })] } });
  expect(await queryRuns(first)).toBe(0);
  // A caller without it (a tool that found the read API on loopback) gets a 401 and nothing else.
  const readApi = /read API at (http:\/\/\S+)/.exec(first.stderr())?.[1];
  expect(readApi).toBeDefined();
  const anonymous = await fetch(`${readApi}/v1/x402`);
  expect(anonymous.status).toBe(401);
  expect(await anonymous.text()).not.toMatch(/0x[0-9a-fA-F]{40}/);
  await stop(first);

  // As an earlier Forge left its state: directories 0755, files 0644 (0755 where executable).
  for (const root of [home, agentTools]) {
    for (const e of modesUnder(root)) {
      const full = path.join(parent, e.path);
      chmodSync(full, lstatSync(full).isDirectory() || parseInt(e.mode, 8) & 0o100 ? 0o755 : 0o644);
    }
  }
  expect(shared(home).length).toBeGreaterThan(500);

  const second = await startUp();
  expect(second.stderr()).toMatch(
    new RegExp(`forge: FORGE_HOME at ${home} had \\d+ path\\(s\\) other users could read or enter .*; made them private to this user`),
  );
  expect(second.stderr()).toMatch(new RegExp(`forge: agent-tools/ at ${agentTools} had \\d+ path\\(s\\) other users could read or enter`));
  expect(shared(home)).toEqual([]);
  expect(shared(agentTools)).toEqual([]);
  // The same token as before (read from the same file): the client needs nothing new.
  const again = await runForgeJson(['tools'], { env: clientEnv() });
  expect(again).toMatchObject({ code: 0, json: { tools: [expect.objectContaining({ name: 'celsius_to_fahrenheit' })] } });
  expect(await queryRuns(second)).toBe(0);
  await stop(second);
}, 240_000);
