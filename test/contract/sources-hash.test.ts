import { mkdirSync, mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { sourcesHash } from '../helpers/sources-hash';

/**
 * The test workflow bundle is cached under the name sourcesHash gives its sources (test/helpers/platform.ts). A stale
 * bundle would run old workflow code beside new activities without a word, so every kind of edit a developer makes
 * under src/ must change the name: a byte deep in a nested file, a file added, removed or renamed.
 */
let root: string;
beforeEach(() => {
  root = mkdtempSync(path.join(tmpdir(), 'forge-sources-hash-'));
  mkdirSync(path.join(root, 'workflows', 'deep'), { recursive: true });
  writeFileSync(path.join(root, 'workflows', 'index.ts'), "export * from './deep/run';\n");
  writeFileSync(path.join(root, 'workflows', 'deep', 'run.ts'), 'export const limit = 10;\n');
});
afterEach(() => rmSync(root, { recursive: true, force: true }));

test('the same sources give the same name', () => {
  expect(sourcesHash(root)).toBe(sourcesHash(root));
});

test.each([
  ['one byte of a nested file changed', () => writeFileSync(path.join(root, 'workflows', 'deep', 'run.ts'), 'export const limit = 11;\n')],
  ['a file added', () => writeFileSync(path.join(root, 'workflows', 'extra.ts'), '')],
  ['a file removed', () => rmSync(path.join(root, 'workflows', 'deep', 'run.ts'))],
  ['a file renamed, its bytes unchanged', () => renameSync(path.join(root, 'workflows', 'deep', 'run.ts'), path.join(root, 'workflows', 'deep', 'run2.ts'))],
])('%s: a new name, so the cached bundle is not reused', (_what, edit) => {
  const before = sourcesHash(root);
  edit();
  expect(sourcesHash(root)).not.toBe(before);
});
