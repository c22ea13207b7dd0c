import { existsSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import {
  InvalidToolNameError,
  readActiveIndex,
  ToolFileConflictError,
  versionPaths,
  writeActiveIndex,
  writeFileOnce,
  writeToolVersionFiles,
  type ActiveIndex,
  type ToolVersionFiles,
} from '../../src/registry';
import { scratchDir } from './helpers';

function files(name: string, version: number, code: string): ToolVersionFiles {
  return {
    manifest: {
      name,
      version,
      contentHash: `hash-${code}`,
      description: 'A test tool.',
      createdAt: '2024-01-01T00:00:00.000Z',
      workflowId: null,
    },
    sourceTs: `// ${code}\n`,
    compiledJs: `export default ${JSON.stringify(code)};\n`,
  };
}

/** Every name under `dir`, recursively, relative to it. */
function tree(dir: string): string[] {
  return readdirSync(dir, { recursive: true, encoding: 'utf8' }).sort();
}

describe('agent-tools files', () => {
  let dir: string;
  beforeEach(() => {
    dir = scratchDir('forge-tool-files-');
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('writes a version as <name>/v<N>.ts, .mjs and .json, and leaves no temp file', async () => {
    const result = await writeToolVersionFiles(dir, files('adder', 1, 'one'));
    expect(result.created).toBe(true);
    expect(tree(dir)).toEqual(['adder', 'adder/v1.json', 'adder/v1.mjs', 'adder/v1.ts']);
    expect(JSON.parse(readFileSync(path.join(dir, 'adder/v1.json'), 'utf8'))).toMatchObject({ name: 'adder', version: 1 });
  });

  it('treats identical bytes as success and refuses to overwrite a version with different bytes', async () => {
    await writeToolVersionFiles(dir, files('adder', 1, 'one'));
    await expect(writeToolVersionFiles(dir, files('adder', 1, 'one'))).resolves.toMatchObject({ created: false });
    await expect(writeToolVersionFiles(dir, files('adder', 1, 'two'))).rejects.toBeInstanceOf(ToolFileConflictError);
    expect(readFileSync(versionPaths(dir, 'adder', 1).compiled, 'utf8')).toBe('export default "one";\n');
    expect(tree(dir).filter((f) => f.endsWith('.tmp'))).toEqual([]);
  });

  it('lets exactly one of many concurrent writers create a file', async () => {
    const target = path.join(dir, 'once.txt');
    const outcomes = await Promise.all(Array.from({ length: 20 }, () => writeFileOnce(target, 'same bytes')));
    expect(outcomes.filter((o) => o.outcome === 'created')).toHaveLength(1);
    expect(outcomes.filter((o) => o.outcome === 'identical')).toHaveLength(19);
    expect(readdirSync(dir)).toEqual(['once.txt']);
  });

  it.each(['../escape', 'Upper', 'a/b', '', '9lives', 'x'.repeat(65), '.hidden'])('rejects the name %j', async (name) => {
    await expect(writeToolVersionFiles(dir, files(name, 1, 'one'))).rejects.toBeInstanceOf(InvalidToolNameError);
    expect(readdirSync(dir)).toEqual([]);
  });

  it('replaces active.json atomically: a concurrent reader never sees a torn file', async () => {
    const index = (generation: number): ActiveIndex => ({
      generation,
      updatedAt: new Date().toISOString(),
      // Large enough that a non-atomic write would be caught half-way.
      tools: Object.fromEntries(Array.from({ length: 500 }, (_, i) => [`tool_${i}`, { version: generation, contentHash: 'h'.repeat(64) }])),
    });
    await writeActiveIndex(dir, index(1));
    let writing = true;
    const seen: number[] = [];
    const reader = (async () => {
      while (writing) {
        const read = await readActiveIndex(dir); // throws ToolFileFormatError on a torn file
        seen.push(read!.generation);
      }
    })();
    for (let g = 2; g <= 60; g++) await writeActiveIndex(dir, index(g));
    writing = false;
    await reader;
    expect(seen.length).toBeGreaterThan(0);
    expect((await readActiveIndex(dir))?.generation).toBe(60);
    expect(readdirSync(dir)).toEqual(['active.json', 'active.log']);
  });

  it('reads a missing active.json as undefined', async () => {
    await expect(readActiveIndex(path.join(dir, 'nothing-here'))).resolves.toBeUndefined();
    expect(existsSync(path.join(dir, 'nothing-here'))).toBe(false);
  });
});
