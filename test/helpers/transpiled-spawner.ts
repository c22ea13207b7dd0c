import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';

/**
 * src/process/spawner.ts and what it imports, transpiled as they are into `into`, for a plain Node process a test
 * starts (its helper's life is tied to that process); returns the spawner's path.
 */
export function transpiledSpawner(into: string): string {
  for (const name of ['spawner', 'setpriv', 'process-helpers']) {
    const source = readFileSync(path.join(__dirname, '..', '..', 'src', 'process', `${name}.ts`), 'utf8');
    const options = { compilerOptions: { module: ts.ModuleKind.CommonJS, target: ts.ScriptTarget.ES2022 } };
    writeFileSync(path.join(into, `${name}.js`), ts.transpileModule(source, options).outputText);
  }
  return path.join(into, 'spawner.js');
}
