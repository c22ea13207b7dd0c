// A process that, like a second worker sharing agent-tools/, replaces a counter file many times under withFileLock:
// read, add one, write. Any overlap of two holders would lose an increment.
// With `hold` instead of a counter file: it takes the lock, says "held" on stdout and keeps it until it is killed, as a
// worker killed in the middle of replacing active.json does.
import { readFileSync, writeFileSync } from 'node:fs';
import { withFileLock } from '../../src/registry/file-lock';

const [counter, lock, rounds] = process.argv.slice(2);
void (async () => {
  if (counter === 'hold') {
    await withFileLock(lock, () => {
      process.stdout.write('held\n');
      return new Promise<never>(() => setInterval(() => undefined, 60_000));
    });
  }
  for (let i = 0; i < Number(rounds); i++) {
    await withFileLock(lock, async () => {
      const n = Number(readFileSync(counter, 'utf8'));
      await new Promise((r) => setImmediate(r)); // give another holder every chance to interleave
      writeFileSync(counter, String(n + 1));
    });
  }
})();
