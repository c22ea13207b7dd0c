// A process that, like a second worker sharing agent-tools/, replaces a counter file many times under withFileLock:
// read, add one, write. Any overlap of two holders would lose an increment.
import { readFileSync, writeFileSync } from 'node:fs';
import { withFileLock } from '../../src/registry/file-lock';

const [counter, lock, rounds] = process.argv.slice(2);
void (async () => {
  for (let i = 0; i < Number(rounds); i++) {
    await withFileLock(lock, async () => {
      const n = Number(readFileSync(counter, 'utf8'));
      await new Promise((r) => setImmediate(r)); // give another holder every chance to interleave
      writeFileSync(counter, String(n + 1));
    });
  }
})();
