import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { WorkflowHandle } from '@temporalio/client';
import type { ToolStore } from '../../src/db';
import { readActiveIndex, versionPaths } from '../../src/registry/tool-files';
import { sandboxCleanupsDone } from '../../src/sandbox';
import { processesMarkedWith } from '../helpers/processes';

/**
 * What a user of the chaos cells checks at the end of a run, shared by the cells' files (the fault-injection matrix
 * has its own harness): the database's active pointers against agent-tools/ on disk, and what the sandbox left behind.
 */

/** What agent-tools/ says is active, and whether every file an active entry needs is there. */
export async function diskView(dir: string): Promise<{ tools: Record<string, { version: number; contentHash: string }>; missingFiles: string[] }> {
  const index = await readActiveIndex(dir);
  const tools: Record<string, { version: number; contentHash: string }> = {};
  const missingFiles: string[] = [];
  for (const [name, entry] of Object.entries(index?.tools ?? {})) {
    tools[name] = { version: entry.version, contentHash: entry.contentHash };
    for (const file of Object.values(versionPaths(dir, name, entry.version))) if (!existsSync(file)) missingFiles.push(path.relative(dir, file));
  }
  return { tools, missingFiles };
}

/** The database's active pointers with the content hash of each active version. */
export async function databaseView(store: ToolStore): Promise<Record<string, { version: number; contentHash: string }>> {
  const tools: Record<string, { version: number; contentHash: string }> = {};
  for (const pointer of await store.listActive()) {
    const row = await store.getVersion(pointer.name, pointer.version);
    tools[pointer.name] = { version: pointer.version, contentHash: row?.contentHash ?? '(no stored row)' };
  }
  return tools;
}

/** Asserts that agent-tools/ holds exactly the database's active versions, every file of each present. */
export async function expectDiskAgreesWithDatabase(store: ToolStore, dir: string): Promise<void> {
  const [disk, database] = await Promise.all([diskView(dir), databaseView(store)]);
  expect(disk.missingFiles).toEqual([]);
  expect(disk.tools).toEqual(database);
}

/**
 * Makes every sandbox run of the platform started with `platformEnv` mark its processes and put its private directory
 * where the test can look: FORGE_SANDBOX_TMPDIR (a fresh directory, in the workers' configuration) and a marker the
 * runs get through FORGE_SANDBOX_ENV_PASSTHROUGH (its value is this process's environment, which runs inherit). Spare harnesses are turned off in `platformEnv`, so every marked process
 * and every directory belongs to a run.
 */
export function watchSandboxRuns(): {
  marker: string;
  tmpRoot: string;
  /** Extra Forge variables for startTestPlatform's `env`. */
  platformEnv: NodeJS.ProcessEnv;
  /** Live processes of the runs, and run directories left behind (after the runs' own cleanups ended). */
  leftovers(): Promise<{ processes: string[]; runDirs: string[] }>;
  dispose(): void;
} {
  const marker = `forge-chaos-${randomBytes(6).toString('hex')}`;
  const tmpRoot = mkdtempSync(path.join(existsSync('/dev/shm') ? '/dev/shm' : tmpdir(), 'forge-chaos-runs-'));
  // Traversable by the runs' own users (mkdtemp makes it 0700), as /dev/shm is.
  chmodSync(tmpRoot, 0o711);
  process.env.FORGE_CHAOS_MARKER = marker;
  return {
    marker,
    tmpRoot,
    platformEnv: { FORGE_SANDBOX_TMPDIR: tmpRoot, FORGE_SANDBOX_ENV_PASSTHROUGH: 'FORGE_CHAOS_MARKER', FORGE_SANDBOX_SPARES: '0' },
    async leftovers() {
      await sandboxCleanupsDone();
      return {
        processes: processesMarkedWith(marker).map((p) => `${p.pid}: ${p.cmdline}`),
        runDirs: readdirSync(tmpRoot),
      };
    },
    dispose() {
      delete process.env.FORGE_CHAOS_MARKER;
      rmSync(tmpRoot, { recursive: true, force: true });
    },
  };
}

/** Polls until `check` holds, or fails naming `what` after `ms`. */
export async function until(check: () => Promise<boolean> | boolean, ms: number, what: string): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** The stage a Forge run's `progress` query reports (undefined while no worker answers). */
export async function stageOf(handle: WorkflowHandle): Promise<string | undefined> {
  try {
    return (await handle.query<{ stage?: string } | undefined>('progress'))?.stage;
  } catch {
    return undefined;
  }
}

/** Temporal's status name of a run (RUNNING, COMPLETED, CANCELLED, ...). */
export async function statusOf(handle: WorkflowHandle): Promise<string> {
  return (await handle.describe()).status.name;
}

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
