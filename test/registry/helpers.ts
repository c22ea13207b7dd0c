import { createHash } from 'node:crypto';
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createToolStore, openPglite, type ForgeDatabase, type ToolStore, type ToolVersion } from '../../src/db';
import { compileTool } from '../../src/sandbox';

/** A scratch directory, on /dev/shm when there is one (PGlite's fsyncs and many small files stay off the disk). */
export function scratchDir(prefix: string): string {
  const base = existsSync('/dev/shm') ? '/dev/shm' : tmpdir();
  return mkdtempSync(path.join(base, prefix));
}

/** A zod tool that greets with `tag`, so each version's output says which version ran. */
export function greeterSource(name: string, tag: string): string {
  return `import { z } from 'zod';
export default {
  name: '${name}',
  description: 'Greets, ${tag} style.',
  inputSchema: z.object({ who: z.string() }),
  async execute(input: { who: string }) {
    return { greeting: '${tag} ' + input.who };
  },
};
`;
}

/** Compiles `source` and persists it as the next version of `name`. */
export async function storeVersion(store: ToolStore, name: string, source: string): Promise<ToolVersion> {
  const compiled = await compileTool(source, name);
  if (!compiled.ok) throw new Error(`fixture does not compile: ${compiled.errors[0].message}`);
  const { row } = await store.insertVersion({
    name,
    contentHash: createHash('sha256').update(source).digest('hex'),
    sourceTs: source,
    compiledJs: compiled.code,
    testInput: { who: 'test' },
    description: `Greets (${name}).`,
    verdict: { status: 'passed' },
    workflowId: `tool-deploy/${name}/test`,
  });
  return row;
}

/** A PGlite database in a scratch directory with its store; `dispose` closes it and removes everything. */
export async function scratchDatabase(): Promise<{
  root: string;
  database: ForgeDatabase;
  store: ToolStore;
  dispose(): Promise<void>;
}> {
  const root = scratchDir('forge-registry-test-');
  const database = await openPglite(path.join(root, 'pgdata'), 'public');
  return {
    root,
    database,
    store: createToolStore(database),
    async dispose() {
      await database.close();
      rmSync(root, { recursive: true, force: true });
    },
  };
}

/**
 * Leaves `lockFile` as a worker killed while it held the lock does: a process takes it with withFileLock and is
 * SIGKILLed holding it. Resolves once that process has ended.
 */
export async function lockLeftByKilledHolder(lockFile: string): Promise<void> {
  // node itself with tsx's loader, not the tsx command, which runs the file in a child of its own that would outlive the kill.
  const child = spawn(process.execPath, ['--import', 'tsx', path.join(__dirname, 'file-lock-child.ts'), 'hold', lockFile], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  await new Promise<void>((resolve, reject) => {
    child.stdout.on('data', (chunk: Buffer) => {
      if (chunk.toString().includes('held')) resolve();
    });
    child.once('exit', (code) => reject(new Error(`the lock holder ended (${code}) before it took ${lockFile}`)));
  });
  child.kill('SIGKILL');
  await exited;
}
