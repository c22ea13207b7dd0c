import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { findFreePort } from '../../src/process/free-port';
import { processesMarkedWith } from '../helpers/processes';
import { cliEnv, FORGE_BIN, ROOT } from './run-cli';

/** A real `forge up` in its own process, as an operator starts it, for suites that drive it with the CLI. */
export interface ForgeUp {
  home: string;
  /** The environment a CLI command needs to reach this platform. */
  clientEnv: NodeJS.ProcessEnv;
  metricsUrl: string;
  /** Everything `forge up` wrote to its terminal's stderr so far. */
  stderr(): string;
  /** SIGTERM (as Ctrl-C would), then whatever the platform left is killed and its FORGE_HOME removed. */
  stop(): Promise<void>;
}

/**
 * Starts `forge up` with its own dev server, ports and FORGE_HOME (a temp directory named `prefix...`, which Forge keeps
 * to its own user: what a tool should read goes elsewhere), plus `env`, and resolves once it says it is up.
 */
export async function startForgeUp(prefix: string, env: NodeJS.ProcessEnv = {}): Promise<ForgeUp> {
  const home = mkdtempSync(path.join(existsSync('/dev/shm') ? '/dev/shm' : tmpdir(), prefix));
  const port = await findFreePort();
  const metricsPort = await findFreePort();
  const child: ChildProcess = spawn(process.execPath, [FORGE_BIN, 'up'], {
    env: cliEnv({
      FORGE_METRICS_ADDRESS: `127.0.0.1:${metricsPort}`,
      FORGE_HOME: home,
      FORGE_AGENT_TOOLS_DIR: path.join(home, 'agent-tools'),
      FORGE_TEMPORAL_PORT: String(port),
      FORGE_UI_PORT: String(await findFreePort()),
      ...env,
    }),
    cwd: ROOT,
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (c: Buffer) => (stdout += c.toString()));
  child.stderr!.on('data', (c: Buffer) => (stderr += c.toString()));
  const up: ForgeUp = {
    home,
    clientEnv: cliEnv({ TEMPORAL_ADDRESS: `127.0.0.1:${port}`, FORGE_HOME: home, FORGE_AGENT_TOOLS_DIR: path.join(home, 'agent-tools') }),
    metricsUrl: `http://127.0.0.1:${metricsPort}/metrics`,
    stderr: () => stderr,
    async stop() {
      await stopForgeUp(child, home);
      rmSync(home, { recursive: true, force: true });
    },
  };
  const deadline = Date.now() + 60_000;
  while (!stdout.includes('Forge is up.')) {
    if (child.exitCode !== null || child.signalCode !== null) {
      await up.stop();
      throw new Error(`forge up exited early:\n${stdout}\n${stderr}`);
    }
    if (Date.now() > deadline) {
      await up.stop();
      throw new Error(`forge up did not come up in 60 s:\n${stdout}\n${stderr}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return up;
}

/**
 * Stops a `forge up` process: SIGTERM and up to 15 s for it to exit, then SIGKILL to whatever still carries its
 * FORGE_HOME (the dev server, workers' helpers), so nothing outlives the test.
 */
export async function stopForgeUp(child: ChildProcess, home: string): Promise<void> {
  if (child.exitCode === null && child.signalCode === null) {
    const exited = new Promise((resolve) => child.once('exit', resolve));
    process.kill(child.pid!, 'SIGTERM');
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([exited, new Promise((r) => (timer = setTimeout(r, 15_000)))]);
    clearTimeout(timer);
  }
  for (const p of processesMarkedWith(home)) {
    try {
      process.kill(p.pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
}
