import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { startForgeUp, type ForgeUp } from '../cli/forge-up';
import { codeBlocks, declaredDependencyViolations, packAndInstall, ROOT, run, type ConsumerProject } from './packed-package';

/*
 * Issue 14, "An SDK a program can import": the package as npm ships it (npm pack), installed in a fresh project, used
 * the way an agent program uses it: imported from an ES module, required from CommonJS, type-checked by tsc, and the
 * README's snippets compiled and run against a real platform. Needs the build (`npm test` builds first).
 */

const TSC = path.join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');

/** What loading a module costs a program, as the program sees it: the exports it got and every file Node loaded. */
interface LoadProbe {
  exports: Record<string, string>;
  loaded: string[];
  ms: number;
}

let project: ConsumerProject;
let shipped: string[];

beforeAll(() => {
  project = packAndInstall();
  shipped = run('tar', ['-tzf', project.tarball], { cwd: project.work })
    .split('\n')
    .filter((f) => f !== '' && !f.endsWith('/'))
    .map((f) => f.replace(/^package\//, ''));
}, 120_000);

afterAll(() => {
  if (project) rmSync(project.work, { recursive: true, force: true });
});

/** Writes `file` in the consumer project and runs it with node there; fails with its output when it fails. */
function runInConsumer(file: string, text: string, options: { cwd?: string; env?: NodeJS.ProcessEnv } = {}): string {
  writeFileSync(path.join(project.dir, file), text);
  return run(process.execPath, [path.join(project.dir, file)], { cwd: options.cwd ?? project.dir, env: options.env, timeoutMs: 60_000 });
}

/** A program of the given kind that loads `specifier` and reports what it got. */
function probe(kind: 'mjs' | 'cjs', specifier: string): LoadProbe {
  const report = `process.stdout.write(JSON.stringify({
  exports: Object.fromEntries(Object.entries(m).map(([k, v]) => [k, typeof v])),
  loaded: Object.keys(require.cache),
  ms: Number(process.hrtime.bigint() - t0) / 1e6,
}));`;
  const text =
    kind === 'mjs'
      ? `import { createRequire } from 'node:module';
const require = createRequire(import.meta.url);
const t0 = process.hrtime.bigint();
const m = await import(${JSON.stringify(specifier)});
${report}`
      : `const t0 = process.hrtime.bigint();
const m = require(${JSON.stringify(specifier)});
${report}`;
  const probed = JSON.parse(runInConsumer(`probe-${specifier.replace(/\W/g, '_')}.${kind}`, text)) as LoadProbe;
  // Forge's files relative to the installed package, its dependencies by the path under node_modules they came from.
  probed.loaded = probed.loaded.map((f) =>
    f.startsWith(project.packageDir + path.sep) ? path.relative(project.packageDir, f) : f.replace(/^.*\/node_modules\//, 'node_modules/'),
  );
  return probed;
}

/** The parts of the platform an SDK import must not load: the worker and its native bridge, the databases, x402, MCP. */
const WORKER_SIDE =
  /^node_modules\/(@temporalio\/worker|@temporalio\/core-bridge|@electric-sql|pg|pg-pool|libpg-query|@x402|viem|@foundry-rs|@modelcontextprotocol|hono|@hono)\/|^dist\/src\/(worker|workflow-bundle|workflows|activities|x402|mcp|commands|policy|platform\/(run-platform|dev-server|worker-connection)|db\/(pglite|postgres|open-database))(\/|\.js$)/;

describe('the packed agent-forge package', () => {
  test('ships what the CLI, the worker and the SDK load at run time, and no tests, TypeScript sources or source maps', () => {
    const manifest = JSON.parse(readFileSync(path.join(project.packageDir, 'package.json'), 'utf8')) as Record<string, unknown>;
    expect(manifest.private).toBeUndefined();
    expect(manifest.bin).toEqual({ forge: 'bin/forge.js' });

    const migrations = readdirSync(path.join(ROOT, 'drizzle'))
      .filter((f) => f.endsWith('.sql'))
      .map((f) => `drizzle/${f}`);
    expect(shipped).toEqual(
      expect.arrayContaining([
        'bin/forge.js',
        'dist/src/index.js',
        'dist/src/index.d.ts',
        'dist/src/client.js',
        'dist/src/cli.js',
        'dist/src/worker.js',
        // `forge up` and `forge worker` load the prebuilt bundle rather than bundling at every start.
        'dist/src/workflow-bundle.js',
        'dist/src/policy/data/pg-builtins.json',
        // Found by path from the package root (src/sandbox/paths.ts, src/db/pglite-client.ts, src/db/migrate.ts).
        'src/sandbox/harness.cjs',
        'src/sandbox/frame-mac.cjs',
        'src/db/pglite-thread.cjs',
        'drizzle/meta/_journal.json',
        ...migrations,
        // What the README's first deployment uses, and what `forge up` seeds the agent repository from.
        'examples/celsius_to_fahrenheit.ts',
        'examples/agent_notes.sql',
        'examples/agent-repo/package.json',
        // What startForge(), forge up and `npx forge setup` run to install the temporal CLI (src/platform/temporal-binary.ts).
        'scripts/setup.js',
        'README.md',
      ]),
    );
    const stray = shipped.filter(
      (f) =>
        /^(test|bench|dist\/bench|docker|\.ci)\//.test(f) || f.endsWith('.map') || (f.endsWith('.ts') && !f.endsWith('.d.ts') && !f.startsWith('examples/')),
    );
    expect(stray).toEqual([]);
  });

  test('declares every package its shipped code loads', () => {
    // An undeclared one works in this checkout and often after `npm install` too (hoisted by luck), until it is not.
    const code = shipped.filter((f) => /\.(c?js)$/.test(f) && f !== 'dist/src/workflow-bundle.js' && !f.startsWith('examples/'));
    expect(declaredDependencyViolations(project.packageDir, code)).toEqual([]);
  });

  test('an ES module imports ForgeClient and ToolRegistry by name, loading neither the worker, a database nor x402', () => {
    const esm = probe('mjs', 'agent-forge');
    expect(esm.exports).toMatchObject({
      ForgeClient: 'function',
      ToolRegistry: 'function',
      ForgeInputError: 'function',
      PlatformUnreachableError: 'function',
      RegistryLoadError: 'function',
      FailureType: 'object',
      SANDBOX_STATUSES: 'object',
    });
    expect(esm.loaded).toContain(path.join('dist', 'src', 'index.js'));
    expect(esm.loaded.filter((f) => WORKER_SIDE.test(f))).toEqual([]);
  });

  test('CommonJS requires the same exports', () => {
    const cjs = probe('cjs', 'agent-forge');
    // An ES module's namespace adds `default` (module.exports) and `__esModule`; the named exports are the same.
    const { default: whole, __esModule: marker, ...named } = probe('mjs', 'agent-forge').exports;
    expect({ whole, marker }).toEqual({ whole: 'object', marker: 'boolean' });
    expect(cjs.exports).toEqual(named);
    expect(cjs.loaded.filter((f) => WORKER_SIDE.test(f))).toEqual([]);
  });

  test('agent-forge/client loads no sandbox, and agent-forge/registry no gRPC', () => {
    const client = probe('mjs', 'agent-forge/client');
    expect(client.exports.ForgeClient).toBe('function');
    expect(client.loaded.filter((f) => /^node_modules\/(esbuild|drizzle-orm)\/|^dist\/src\/(sandbox|registry|db)\//.test(f))).toEqual([]);

    const registry = probe('cjs', 'agent-forge/registry');
    expect(registry.exports.ToolRegistry).toBe('function');
    expect(registry.loaded.filter((f) => /^node_modules\/(@temporalio\/client|@grpc)\/|^dist\/src\/client\.js$/.test(f))).toEqual([]);
    expect(registry.loaded.filter((f) => WORKER_SIDE.test(f))).toEqual([]);
  });

  test("a TypeScript program type-checks against the package's types, as an ES module and as CommonJS", () => {
    // The @ts-expect-error lines fail the check if the types were missing (everything `any`) or too loose.
    writeFileSync(
      path.join(project.dir, 'agent.mts'),
      `import { ForgeClient, ToolRegistry, ForgeInputError, type DeployToolResult, type InvokeResult, type SandboxStatus } from 'agent-forge';
import type { RunHandle } from 'agent-forge/client';
import { ToolRegistry as SameRegistry } from 'agent-forge/registry';

export async function deploy(source: string): Promise<DeployToolResult | string> {
  const forge = await ForgeClient.connect({ address: '127.0.0.1:7233', namespace: 'default' });
  try {
    const handle: RunHandle<DeployToolResult> = await forge.startDeployTool({ name: 'celsius', source, testInput: { celsius: 1 } });
    const result = await handle.result({ onProgress: (p) => console.log(p.stages.length) });
    if (result.status === 'rejected') {
      const verdict: SandboxStatus | 'refused' = result.verdict;
      return verdict + result.diagnostics.message;
    }
    // @ts-expect-error: a deployment is active or rejected, nothing else
    if (result.status === 'deployed') return 'never';
    return result;
  } catch (err) {
    if (err instanceof ForgeInputError) return err.message;
    throw err;
  } finally {
    await forge.close();
  }
}

export async function call(): Promise<InvokeResult> {
  const registry: SameRegistry = await ToolRegistry.open({ dir: 'agent-tools', spares: 1 });
  // @ts-expect-error: invoke takes a tool name and its input
  await registry.invoke({ name: 'celsius' });
  return registry.invoke('celsius', { celsius: 100 });
}
`,
    );
    writeFileSync(
      path.join(project.dir, 'agent.cts'),
      `import forge = require('agent-forge');
import { ToolRegistry } from 'agent-forge';

export function names(registry: ToolRegistry): string[] {
  return registry.list().map((t) => t.name);
}
export const connect: () => Promise<forge.ForgeClient> = () => forge.ForgeClient.connect();
// @ts-expect-error: ForgeClient has no public constructor
export const made = new forge.ForgeClient();
`,
    );
    // No skipLibCheck: a consumer's strict build type-checks Forge's declarations and everything they import (issue 25).
    const strict = { strict: true, noEmit: true, types: ['node'], target: 'ES2022', lib: ['ES2022'] };
    for (const [name, compilerOptions, files] of [
      ['tsconfig.node16.json', { ...strict, module: 'node16', moduleResolution: 'node16' }, ['agent.mts', 'agent.cts']],
      ['tsconfig.bundler.json', { ...strict, module: 'preserve', moduleResolution: 'bundler' }, ['agent.mts']],
    ] as const) {
      writeFileSync(path.join(project.dir, name), JSON.stringify({ compilerOptions, files }));
      const checked = spawnSync(process.execPath, [TSC, '-p', name], { cwd: project.dir, encoding: 'utf8' });
      expect({ config: name, errors: checked.stdout + checked.stderr }).toEqual({ config: name, errors: '' });
    }
  }, 120_000);

  describe("the README's snippets", () => {
    const readme = readFileSync(path.join(ROOT, 'README.md'), 'utf8');
    const ts = codeBlocks(readme, 'ts').filter((b) => b.includes("from 'agent-forge"));
    const js = codeBlocks(readme, 'js').filter((b) => b.includes("require('agent-forge"));
    let up: ForgeUp | undefined;

    afterAll(async () => {
      await up?.stop();
    });

    test('the CommonJS one runs', () => {
      expect(js.length).toBeGreaterThan(0);
      js.forEach((block, i) => runInConsumer(`readme-${i}.cjs`, block));
    });

    test('the TypeScript ones compile against the package and run against a platform', async () => {
      expect(ts.length).toBeGreaterThan(0);
      const files = ts.map((block, i) => {
        writeFileSync(path.join(project.dir, `readme-${i}.mts`), block);
        return `readme-${i}.mts`;
      });
      // Compiled as the README's reader would, an ES module under node16 (top-level await), into .mjs files to run.
      const compilerOptions = { strict: true, types: ['node'], target: 'ES2022', lib: ['ES2022'], module: 'node16', outDir: 'out' };
      writeFileSync(path.join(project.dir, 'tsconfig.readme.json'), JSON.stringify({ compilerOptions, files }));
      const compiled = spawnSync(process.execPath, [TSC, '-p', 'tsconfig.readme.json'], { cwd: project.dir, encoding: 'utf8' });
      expect(compiled.stdout + compiled.stderr).toBe('');

      up = await startForgeUp('forge-sdk-readme-');
      // Run from the package's root, where the README's relative paths (examples/...) are, as from a checkout.
      const outputs = files.map((f) =>
        run(process.execPath, [path.join(project.dir, 'out', f.replace(/\.mts$/, '.mjs'))], { cwd: project.packageDir, env: up!.clientEnv, timeoutMs: 60_000 }),
      );
      expect(outputs.join('')).toContain('celsius_to_fahrenheit v1 is active');
      expect(outputs.join('')).toContain('{ fahrenheit: 212 }');
    }, 180_000);
  });
});
