import { fork } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * The bare floor of any child-process tool run: fork a module, receive one message over IPC, see the child exit.
 * Nothing else — no compile, no limits, no cleanup. `body` is the module's code; it must call process.send once.
 */
export function floorRunner(body: string): () => Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'forge-bench-floor-'));
  const file = join(dir, 'floor.mjs');
  writeFileSync(file, body);
  return () =>
    new Promise<void>((resolve, reject) => {
      // execArgv: [] and a bare environment, so that a loader the bench itself runs under (NODE_OPTIONS) is not inherited.
      const child = fork(file, [], { execArgv: [], env: { PATH: process.env.PATH }, stdio: ['ignore', 'ignore', 'ignore', 'ipc'] });
      let got = false;
      child.on('message', () => (got = true));
      child.on('error', reject);
      child.on('exit', () => (got ? resolve() : reject(new Error('floor child sent no message'))));
    });
}
