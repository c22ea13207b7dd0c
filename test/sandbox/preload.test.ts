import { bareImports, esmEntryOf, PreloadSet } from '../../src/sandbox/preload';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { runSandbox, SandboxPool } from '../../src/sandbox';
import { projectNodeModules } from '../../src/sandbox/paths';

// Spares that load the packages tools import before their run (issue 15). The verdict guarantees under a pool are
// the hostile corpus's (sandbox.test.ts runs it through a pool that preloads zod); here: what is preloaded, and that a
// tool importing it gets the module that was already loaded, and that it runs the same.

test('bareImports: package names of static imports, scoped names kept whole, relative and node: ones left out', () => {
  const code = `import { z } from "zod";\nimport * as v from 'viem/accounts';\nimport "@scope/pkg/sub";\nimport x from './local.js';\nimport fs from 'node:fs';\nexport { a } from "pkg-a";`;
  expect(bareImports(code).sort()).toEqual(['@scope/pkg', 'pkg-a', 'viem', 'zod']);
});

test('esmEntryOf: the file `import` loads (exports "import" condition), real path; undefined when not installed', () => {
  expect(esmEntryOf('zod')).toMatch(/\/node_modules\/zod\/index\.js$/);
  expect(esmEntryOf('no-such-package-anywhere')).toBeUndefined();
});

test('PreloadSet: the configured packages first, then the most recently imported ones, at most `max`; one entry each', () => {
  const set = new PreloadSet(['zod'], 3);
  // Before any run: the configured package's CommonJS entry, the form a tool runs in whenever it can.
  expect(set.files()).toEqual([expect.stringMatching(/zod\/index\.cjs$/)]);
  set.learn(`import { createPublicClient } from 'viem';`, 'cjs');
  set.learn(`import { Hono } from 'hono';`, 'cjs');
  set.learn(`import { serve } from '@hono/node-server';`, 'cjs');
  const files = set.files();
  // One file a package: the two entries are two copies, and a run loads only one of them.
  expect(files).toHaveLength(3);
  expect(files[0]).toMatch(/zod\/index\.cjs$/);
  expect(files[1]).toMatch(/@hono\/node-server\/dist\/index\.cjs$/);
  expect(files[2]).toMatch(/node_modules\/hono\/dist\/cjs\/index\.js$/);
  expect(files.some((f) => /viem/.test(f))).toBe(false);
});

test('PreloadSet: a package is preloaded in the form of the latest run that imported it', () => {
  const set = new PreloadSet(['zod'], 2);
  set.learn(`import { z } from 'zod';\nawait Promise.resolve();`, 'esm');
  expect(set.files()).toEqual([esmEntryOf('zod')]);
  set.learn(`import { z } from 'zod';`, 'cjs');
  expect(set.files()).toEqual([expect.stringMatching(/zod\/index\.cjs$/)]);
});

test('PreloadSet: a stream of tools naming ever new packages keeps it bounded, and the configured ones first', () => {
  // A hostile agent deploys tool after tool importing names nobody installed, in both forms: what the set remembers
  // stays within `max`, and the configured package is still preloaded.
  const set = new PreloadSet(['zod'], 3);
  for (let i = 0; i < 5_000; i++) set.learn(`import a from 'no-such-${i}';\nimport b from 'zod';`, i % 2 ? 'cjs' : 'esm');
  const remembered = set as unknown as { learned: string[]; formats: Map<string, string>; entries: Map<string, unknown> };
  expect(remembered.learned.length).toBeLessThanOrEqual(2);
  expect(remembered.formats.size).toBeLessThanOrEqual(3);
  expect(remembered.entries.size).toBeLessThanOrEqual(3);
  // Uninstalled names resolve to nothing and are left out; zod in the form of its latest importer (i = 4,999: cjs).
  expect(set.files()).toEqual([expect.stringMatching(/zod\/index\.cjs$/)]);
  expect(remembered.entries.size).toBeLessThanOrEqual(3);
});

test('a pool learns what a run imports in the form the run loads it (a CommonJS run teaches the require entry)', async () => {
  const preload = new PreloadSet([], 4);
  const pool = new SandboxPool({}, 1, { preload });
  try {
    const source = `import { z } from 'zod';
export default { name: 'learns', inputSchema: z.object({}), async execute() { return { ok: true }; } };`;
    const verdict = await runSandbox({ name: 'learns', source, input: {} }, { pool });
    expect(verdict.status).toBe('passed');
    expect(preload.files()).toEqual([expect.stringMatching(/zod\/index\.cjs$/)]);
  } finally {
    await pool.close();
  }
});

test('a tool run on a spare gets the preloaded module itself (evaluated once, before the run), and runs as on a fresh process', async () => {
  // A module that records the harness's argv length when it is evaluated: a spare preloads it while its argv still
  // names the preload files; a fresh process (or a spare that did not preload it) evaluates it when the tool imports it.
  // Inside the installed packages: a run sees those (and its own directory) and nothing else of the host's files.
  const dir = mkdtempSync(path.join(projectNodeModules(), '.forge-preload-test-'));
  chmodSync(dir, 0o755);
  const probe = path.join(dir, 'probe.mjs');
  writeFileSync(probe, 'export const argvAtLoad = process.argv.length;\n', { mode: 0o644 });
  const cjsProbe = path.join(dir, 'probe.cjs');
  writeFileSync(cjsProbe, 'module.exports = { argvAtLoad: process.argv.length };\n', { mode: 0o644 });
  const source = `import { z } from 'zod';
import { argvAtLoad } from ${JSON.stringify(probe)};
import cjs from ${JSON.stringify(cjsProbe)};
import { getPriority } from 'node:os';
export default {
  name: 'preloaded',
  inputSchema: z.object({ n: z.number() }),
  async execute({ n }: { n: number }) { return { doubled: n * 2, preloaded: argvAtLoad > 2, cjsPreloaded: cjs.argvAtLoad > 2, argvNow: process.argv.length, priority: getPriority() }; },
};`;
  const preload = new PreloadSet(['zod'], 4);
  const files = preload.files.bind(preload);
  preload.files = () => [...files(), probe, cjsProbe];
  const pool = new SandboxPool({}, 1, { preload });
  try {
    for (let i = 0; i < 100 && pool.ready < 1; i++) await new Promise((r) => setTimeout(r, 100));
    const pooled = await runSandbox({ name: 'preloaded', source, input: { n: 21 } }, { pool });
    expect(pool.served).toBe(1);
    expect(pooled).toMatchObject({ status: 'passed', output: { doubled: 42, preloaded: true, cjsPreloaded: true, argvNow: 2 } });
    const fresh = await runSandbox({ name: 'preloaded', source, input: { n: 21 } });
    expect(fresh).toMatchObject({ status: 'passed', output: { doubled: 42, preloaded: false, cjsPreloaded: false, argvNow: 2 } });
    // A spare preloads at a low CPU priority, and the tool runs at the priority a fresh process has.
    expect((pooled.output as { priority: number }).priority).toBe((fresh.output as { priority: number }).priority);
  } finally {
    await pool.close();
    rmSync(dir, { recursive: true, force: true });
  }
});
