import { createHash } from 'node:crypto';
import { readdirSync, readFileSync, type Dirent } from 'node:fs';
import path from 'node:path';

/**
 * The name of the cached test workflow bundle (platform.ts): sha256 over the paths and bytes of every file under
 * `root`, and the versions of the SDK that bundles them. Any change under src/ must change it, or a suite would run
 * workflow code older than its activities (test/contract/sources-hash.test.ts).
 */
export function sourcesHash(root: string): string {
  const hash = createHash('sha256');
  for (const pkg of ['@temporalio/worker', '@temporalio/workflow'])
    hash.update(`${pkg}@${(JSON.parse(readFileSync(require.resolve(`${pkg}/package.json`), 'utf8')) as { version: string }).version}\n`);
  const files = (readdirSync(root, { recursive: true, withFileTypes: true }) as Dirent[]).filter((e) => e.isFile()).map((e) => path.join(e.parentPath, e.name));
  for (const file of files.sort()) hash.update(`${path.relative(root, file)}\n`).update(readFileSync(file));
  return hash.digest('hex').slice(0, 24);
}
