import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

/*
 * The layering of docs/design.md "Where things live", held on the real module graph: the client SDK loads no part of
 * the worker side, the contract imports no other part of Forge, no layer imports values from workflows/, the core
 * folders and process/ never import platform/, the MCP server never imports the CLI, and no module imports itself
 * through others (type-only imports included).
 */

const root = path.resolve(__dirname, '..', '..');
const src = path.join(root, 'src');

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const full = path.join(dir, e.name);
    if (e.isDirectory()) return sourceFiles(full);
    return /\.(ts|cjs)$/.test(e.name) && !e.name.endsWith('.d.ts') && !e.name.endsWith('.d.cts') ? [full] : [];
  });
}

/**
 * The modules a file imports: static `import`/`export ... from`, `require(...)`, `require.resolve(...)` and `import(...)`
 * (also as a type, `typeof import(...)`). With `values`, only those it imports for their values (`import type` and
 * `export type` left out).
 */
function importsOf(file: string, options: { values?: boolean } = {}): string[] {
  const text = readFileSync(file, 'utf8');
  const specs: string[] = [];
  for (const m of text.matchAll(/^(?:import|export)\s+(type\s+)?(?:[^'";]*?\sfrom\s+)?['"]([^'"]+)['"]/gm)) {
    if (!options.values || !m[1]) specs.push(m[2]);
  }
  for (const m of text.matchAll(/require(?:\.resolve)?\(\s*['"]([^'"]+)['"]\s*\)/g)) specs.push(m[1]);
  if (!options.values) for (const m of text.matchAll(/\bimport\(\s*['"]([^'"]+)['"]\s*\)/g)) specs.push(m[1]);
  return specs;
}

/** The modules a file imports for their values. */
const valueImports = (file: string) => importsOf(file, { values: true });

/**
 * The source file under src/ that a relative specifier of `file` names (`./run`, `../process/spawner`, `./harness.cjs`),
 * `null` for one that names a file of another kind (`.json`, a `.d.cts` declaration), undefined for a package.
 */
function resolveImport(file: string, spec: string): string | null | undefined {
  if (!spec.startsWith('.')) return undefined;
  const base = path.resolve(path.dirname(file), spec);
  for (const candidate of [base, `${base}.ts`, `${base}.cjs`, path.join(base, 'index.ts')]) {
    if (/\.(ts|cjs)$/.test(candidate) && !/\.d\.c?ts$/.test(candidate) && existsSync(candidate)) return candidate;
  }
  if (existsSync(base) || existsSync(`${base}.d.cts`)) return null;
  throw new Error(`${path.relative(root, file)} imports ${spec}, which names no file`);
}

/** Every source file under src/ and the source files it imports (type-only imports included), resolved. */
function moduleGraph(): Map<string, string[]> {
  return new Map(
    sourceFiles(src).map((file) => [
      file,
      [...new Set(importsOf(file).map((spec) => resolveImport(file, spec)))].filter((to): to is string => typeof to === 'string'),
    ]),
  );
}

/**
 * Circles of `graph`, each as the path of files that leads from a file back to it: one for every import a depth-first
 * walk meets that leads back onto its own path, so none exactly when the graph has none.
 */
function circlesOf(graph: Map<string, string[]>): string[][] {
  const circles: string[][] = [];
  const done = new Set<string>();
  const onPath: string[] = [];
  const visit = (file: string) => {
    onPath.push(file);
    for (const to of graph.get(file) ?? []) {
      const at = onPath.indexOf(to);
      if (at >= 0) circles.push([...onPath.slice(at), to]);
      else if (!done.has(to)) visit(to);
    }
    onPath.pop();
    done.add(file);
  };
  for (const file of graph.keys()) if (!done.has(file)) visit(file);
  return circles;
}

/** The files a fresh Node has loaded once it required `entry` (relative to the repository), relative paths. */
function modulesLoadedBy(entry: string): string[] {
  const probe = spawnSync(
    process.execPath,
    ['-e', 'require(process.argv[1]); process.stdout.write(JSON.stringify(Object.keys(require.cache)))', path.join(root, entry)],
    { encoding: 'utf8' },
  );
  expect(probe.stderr).toBe('');
  return (JSON.parse(probe.stdout) as string[]).map((f) => path.relative(root, f));
}

function resolvesInto(file: string, spec: string, dir: string): boolean {
  return spec.startsWith('.') && path.resolve(path.dirname(file), spec).startsWith(dir);
}

describe('the import graph', () => {
  test('loading the client SDK loads neither esbuild, @temporalio/worker, the sandbox, the database nor the workflows', () => {
    // The compiled entry an agent imports (npm test builds first), loaded by a fresh Node as an agent's program would.
    const loaded = modulesLoadedBy(path.join('dist', 'src', 'client.js'));
    expect(loaded).toContain(path.join('dist', 'src', 'client.js'));
    const forbidden = loaded.filter(
      (f) =>
        /node_modules\/(esbuild|@esbuild|@temporalio\/worker|@temporalio\/core-bridge|@electric-sql|pg|libpg-query|drizzle-orm)\//.test(f) ||
        /^dist\/src\/(sandbox|db|registry|workflows|activities|policy|platform\/(dev-server|worker-connection|run-platform))(\/|\.js$)/.test(f),
    );
    expect(forbidden).toEqual([]);
  });

  test('loading the CLI loads no worker side until `forge up` or `forge worker` runs', () => {
    // Every command an agent runs starts a Node process: the worker side (@temporalio/worker, rxjs, the platform)
    // doubled its start-up (issue 10; test/cli/offline.test.ts runs twelve at once).
    const loaded = modulesLoadedBy(path.join('dist', 'src', 'cli.js'));
    expect(
      loaded.filter(
        (f) => /node_modules\/(@temporalio\/worker|@temporalio\/core-bridge|rxjs)\//.test(f) || /^dist\/src\/(worker|platform\/run-platform)\.js$/.test(f),
      ),
    ).toEqual([]);
    // Nor, before a command runs, the SDK, gRPC, zod, the parser or the sandbox: `forge --version` and `--help` load
    // commander and the command definitions only (issue 14: an agent shelling out to forge pays start-up every call;
    // `npm run bench -- cli` measures it).
    // The MCP SDK (and src/mcp) load only when `forge mcp` runs.
    const heavy = loaded.filter(
      (f) =>
        /node_modules\/(@temporalio|@grpc|zod|drizzle-orm|libpg-query|esbuild|@modelcontextprotocol)\//.test(f) ||
        /^dist\/src\/(client|config|sandbox|policy|registry|db|mcp)(\/|\.js$)/.test(f),
    );
    expect(heavy).toEqual([]);
  });

  test('loading the workers loads no x402 client, seller or chain library', () => {
    // Every worker loads this at start, most never pay or sell, and a worker restarted after a crash races its runs'
    // heartbeat timeouts: viem, @x402/* and hono (~0.25 s) load where they are used (src/x402/runtime.ts says where).
    const loaded = modulesLoadedBy(path.join('dist', 'src', 'worker.js'));
    expect(loaded).toContain(path.join('dist', 'src', 'platform', 'x402-worker.js'));
    expect(
      loaded.filter(
        (f) =>
          /node_modules\/(viem|@x402|hono|@hono|ox|abitype)\//.test(f) || /^dist\/src\/x402\/(payer|seller|sales|reconcile|viem|local-network)\.js$/.test(f),
      ),
    ).toEqual([]);
  });

  test("a worker with a wallet loads viem's accounts for its address at start, not the rest of viem", () => {
    // Measured 2026-11-29: viem/accounts loads in ~70 ms, all of viem in ~215; the rest waits for the first payment.
    const script = `
      const { startX402Runtime } = require(process.argv[1]);
      const config = { walletKey: () => '0x${'11'.repeat(32)}', policy: { allowedAssets: [] }, dev: false };
      startX402Runtime(config, () => undefined).then((r) => process.stdout.write(JSON.stringify({ address: r.address, loaded: Object.keys(require.cache) })));`;
    const probe = spawnSync(process.execPath, ['-e', script, path.join(root, 'dist', 'src', 'x402', 'runtime.js')], { encoding: 'utf8' });
    expect(probe.stderr).toBe('');
    const { address, loaded } = JSON.parse(probe.stdout) as { address: string; loaded: string[] };
    expect(address).toMatch(/^0x[0-9a-fA-F]{40}$/);
    const files = loaded.map((f) => path.relative(root, f));
    expect(files).toContain(path.join('dist', 'src', 'x402', 'viem-accounts.js'));
    expect(
      files.filter(
        (f) => f === path.join('node_modules', 'viem', '_cjs', 'index.js') || /^dist\/src\/x402\/viem\.js$/.test(f) || /node_modules\/@x402\//.test(f),
      ),
    ).toEqual([]);
  });

  test('the worker side loads no PostgreSQL driver until DATABASE_URL asks for one', () => {
    // The embedded database is the default, and a worker restarted after a crash is on its runs' critical path:
    // node-postgres and drizzle's driver for it (40-55 ms) load in openDatabase when the configuration names PostgreSQL.
    const loaded = [path.join('dist', 'src', 'worker.js'), path.join('dist', 'src', 'platform', 'run-platform.js')].flatMap(modulesLoadedBy);
    expect(loaded).toContain(path.join('dist', 'src', 'db', 'open-database.js'));
    expect(
      loaded.filter((f) => /node_modules\/(pg|pg-pool|drizzle-orm\/node-postgres)\//.test(f) || f === path.join('dist', 'src', 'db', 'postgres.js')),
    ).toEqual([]);
  });

  test('contract/ imports no other part of Forge and nothing of Node, the database or the worker', () => {
    // zod is a library, not a layer: the input schemas (contract/inputs.ts) are zod, and only they.
    const inputs = path.join(src, 'contract', 'inputs.ts');
    const offenders = sourceFiles(path.join(src, 'contract')).flatMap((file) =>
      valueImports(file)
        .filter((spec) => !(spec.startsWith('./') || spec.startsWith('@noble/hashes/') || spec === '@temporalio/common' || (spec === 'zod' && file === inputs)))
        .map((spec) => `${path.relative(root, file)} imports ${spec}`),
    );
    expect(offenders).toEqual([]);
  });

  test('no workflow, and no other file of contract/, loads the input schemas (zod stays out of the workflow bundle)', () => {
    const inputs = path.join(src, 'contract', 'inputs.ts');
    const offenders = [...sourceFiles(path.join(src, 'workflows')), ...sourceFiles(path.join(src, 'contract'))].flatMap((file) =>
      valueImports(file)
        .filter((spec) => spec.startsWith('.') && path.resolve(path.dirname(file), spec).replace(/\.ts$/, '') === inputs.replace(/\.ts$/, ''))
        .map((spec) => `${path.relative(root, file)} imports ${spec}`),
    );
    expect(offenders).toEqual([]);
  });

  test("nothing but the worker's registration imports values from workflows/", () => {
    const workflows = path.join(src, 'workflows');
    const offenders = sourceFiles(src)
      .filter((file) => !file.startsWith(workflows + path.sep) && file !== path.join(src, 'platform', 'control-worker.ts'))
      .flatMap((file) =>
        valueImports(file)
          .filter((spec) => resolvesInto(file, spec, workflows))
          .map((spec) => `${path.relative(root, file)} imports ${spec}`),
      );
    expect(offenders).toEqual([]);
  });

  test('activities import no values from workflows and workflows none from activities (types only)', () => {
    const pairs: [string, string][] = [
      ['activities', 'workflows'],
      ['workflows', 'activities'],
    ];
    const offenders = pairs.flatMap(([from, to]) =>
      sourceFiles(path.join(src, from)).flatMap((file) =>
        valueImports(file)
          .filter((spec) => resolvesInto(file, spec, path.join(src, to)))
          .map((spec) => `${path.relative(root, file)} imports ${spec}`),
      ),
    );
    expect(offenders).toEqual([]);
  });

  test('the core folders and process/ never import platform/ (type-only imports included)', () => {
    // platform/ wires the platform together (Temporal, the dev server, the read API, the workers' start); what the
    // folders below it need of the operating system is in process/, the ground floor.
    const platform = path.join(src, 'platform');
    const below = ['contract', 'process', 'sandbox', 'policy', 'registry', 'db', 'git', 'x402'];
    const graph = moduleGraph();
    const offenders = below.flatMap((folder) =>
      sourceFiles(path.join(src, folder)).flatMap((file) =>
        (graph.get(file) ?? [])
          .filter((to) => to.startsWith(platform + path.sep))
          .map((to) => `${path.relative(root, file)} imports ${path.relative(root, to)}`),
      ),
    );
    expect(offenders).toEqual([]);
  });

  test('mcp/ never imports commands/ (type-only imports included): the MCP server does not depend on the CLI', () => {
    const commands = path.join(src, 'commands');
    const graph = moduleGraph();
    const offenders = sourceFiles(path.join(src, 'mcp')).flatMap((file) =>
      (graph.get(file) ?? []).filter((to) => to.startsWith(commands + path.sep)).map((to) => `${path.relative(root, file)} imports ${path.relative(root, to)}`),
    );
    expect(offenders).toEqual([]);
  });

  test('no module imports itself through others: no circles, type-only imports included', () => {
    const graph = moduleGraph();
    // The parser sees the imports it should: a file known to import another through each form it reads.
    expect(graph.get(path.join(src, 'embedded.ts'))).toContain(path.join(src, 'platform', 'embedded.ts')); // import type, require
    expect(graph.get(path.join(src, 'sandbox', 'run.ts'))).toContain(path.join(src, 'sandbox', 'compile.ts'));
    expect(
      circlesOf(
        new Map([
          ['a', ['b']],
          ['b', ['c', 'a']],
          ['c', []],
        ]),
      ),
    ).toEqual([['a', 'b', 'a']]);
    const circles = circlesOf(graph).map((circle) => circle.map((file) => path.relative(src, file)).join(' -> '));
    expect(circles).toEqual([]);
  });
});
