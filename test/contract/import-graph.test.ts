import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

/*
 * The layering of DESIGN.md "Where things live", held on the real module graph: the client SDK loads no part of the
 * worker side, the contract imports no other part of Forge, and no layer imports values from workflows/.
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

/** The modules a file imports for their values (`import type` and `export type` left out). */
function valueImports(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  const specs: string[] = [];
  for (const m of text.matchAll(/^(?:import|export)\s+(type\s+)?(?:[^'";]*?\sfrom\s+)?['"]([^'"]+)['"]/gm)) {
    if (!m[1]) specs.push(m[2]);
  }
  for (const m of text.matchAll(/require(?:\.resolve)?\(\s*['"]([^'"]+)['"]\s*\)/g)) specs.push(m[1]);
  return specs;
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
    const forbidden = loaded.filter((f) =>
      /node_modules\/(esbuild|@esbuild|@temporalio\/worker|@temporalio\/core-bridge|@electric-sql|pg|libpg-query|drizzle-orm)\//.test(f) ||
      /^dist\/src\/(sandbox|db|registry|workflows|activities|policy|platform\/(dev-server|worker-connection|run-platform))(\/|\.js$)/.test(f),
    );
    expect(forbidden).toEqual([]);
  });

  test('loading the CLI loads no worker side until `forge up` or `forge worker` runs', () => {
    // Every command an agent runs starts a Node process: the worker side (@temporalio/worker, rxjs, the platform)
    // doubled its start-up (issue 10; test/cli/offline.test.ts runs twelve at once).
    const loaded = modulesLoadedBy(path.join('dist', 'src', 'cli.js'));
    expect(loaded.filter((f) => /node_modules\/(@temporalio\/worker|@temporalio\/core-bridge|rxjs)\//.test(f) || /^dist\/src\/(worker|platform\/run-platform)\.js$/.test(f))).toEqual([]);
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
    expect(loaded.filter((f) => /node_modules\/(viem|@x402|hono|@hono|ox|abitype)\//.test(f) || /^dist\/src\/x402\/(payer|seller|sales|reconcile|viem|local-network)\.js$/.test(f))).toEqual([]);
  });

  test('contract/ imports no other part of Forge and nothing of Node, the database or the worker', () => {
    const offenders = sourceFiles(path.join(src, 'contract')).flatMap((file) =>
      valueImports(file)
        .filter((spec) => !(spec.startsWith('./') || spec.startsWith('@noble/hashes/') || spec === '@temporalio/common'))
        .map((spec) => `${path.relative(root, file)} imports ${spec}`),
    );
    expect(offenders).toEqual([]);
  });

  test("nothing but the worker's registration imports values from workflows/", () => {
    const workflows = path.join(src, 'workflows');
    const offenders = sourceFiles(src)
      .filter((file) => !file.startsWith(workflows + path.sep) && file !== path.join(src, 'worker.ts'))
      .flatMap((file) => valueImports(file).filter((spec) => resolvesInto(file, spec, workflows)).map((spec) => `${path.relative(root, file)} imports ${spec}`));
    expect(offenders).toEqual([]);
  });

  test('activities import no values from workflows and workflows none from activities (types only)', () => {
    const pairs: [string, string][] = [
      ['activities', 'workflows'],
      ['workflows', 'activities'],
    ];
    const offenders = pairs.flatMap(([from, to]) =>
      sourceFiles(path.join(src, from)).flatMap((file) =>
        valueImports(file).filter((spec) => resolvesInto(file, spec, path.join(src, to))).map((spec) => `${path.relative(root, file)} imports ${spec}`),
      ),
    );
    expect(offenders).toEqual([]);
  });
});
