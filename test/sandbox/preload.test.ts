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

test('PreloadSet: the configured packages first, then the most recently imported ones, at most `max`', () => {
  const set = new PreloadSet(['zod'], 3);
  set.learn(`import { createPublicClient } from 'viem';`);
  set.learn(`import { Hono } from 'hono';`);
  set.learn(`import { serve } from '@hono/node-server';`);
  const files = set.files();
  // Each package's CommonJS and ES module entries, the configured one first, then the latest learned.
  expect(files.slice(0, 2)).toEqual([expect.stringMatching(/zod\/index\.cjs$/), expect.stringMatching(/zod\/index\.js$/)]);
  expect(files.slice(2).every((f) => /@hono\/node-server|\/hono\//.test(f))).toBe(true);
  expect(files.some((f) => /@hono\/node-server/.test(f)) && files.some((f) => /node_modules\/hono\//.test(f))).toBe(true);
  expect(files.some((f) => /viem/.test(f))).toBe(false);
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
