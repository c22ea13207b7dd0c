import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';

const PROCESS_DIR = path.join(__dirname, '..', '..', 'src', 'process');

/**
 * src/process/spawner.ts and the modules of src/process/ it imports (followed, not listed: a module moved there is
 * found), transpiled as they are into `into`, for a plain Node process a test starts (its helper's life is tied to
 * that process); returns the spawner's path.
 */
export function transpiledSpawner(into: string): string {
  const pending = ['spawner'];
  const done = new Set<string>();
  while (pending.length > 0) {
    const name = pending.pop()!;
    if (done.has(name)) continue;
    done.add(name);
    const source = readFileSync(path.join(PROCESS_DIR, `${name}.ts`), 'utf8');
    for (const m of source.matchAll(/from '\.\/([\w-]+)'/g)) pending.push(m[1]);
    const options = { compilerOptions: { module: ts.ModuleKind.CommonJS, target: ts.ScriptTarget.ES2022 } };
    writeFileSync(path.join(into, `${name}.js`), ts.transpileModule(source, options).outputText);
  }
  return path.join(into, 'spawner.js');
}
