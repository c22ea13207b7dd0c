import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';

/** The repository root: what `npm pack` packs (after `npm run build`, which `npm test` runs first). */
export const ROOT = path.resolve(__dirname, '..', '..');

/** A fresh project with the packed agent-forge installed in it, as `npm install agent-forge-<v>.tgz` would leave it. */
export interface ConsumerProject {
  /** The temporary directory holding the tarball and the project; the caller removes it. */
  work: string;
  tarball: string;
  /** The project's root, with package.json and node_modules/. */
  dir: string;
  /** node_modules/agent-forge: the package as shipped. */
  packageDir: string;
}

/** Runs a command to completion; throws with its output when it fails. */
export function run(command: string, args: string[], options: { cwd: string; env?: NodeJS.ProcessEnv; timeoutMs?: number }): string {
  const res = spawnSync(command, args, { cwd: options.cwd, env: options.env ?? process.env, encoding: 'utf8', timeout: options.timeoutMs ?? 120_000 });
  if (res.status !== 0) {
    throw new Error(
      `${command} ${args.join(' ')} exited ${res.status ?? res.signal}${res.error ? ` (${res.error.message})` : ''}:\n${res.stdout}\n${res.stderr}`,
    );
  }
  return res.stdout;
}

/**
 * Packs the repository with `npm pack` and installs the tarball into a new project under /dev/shm (memory-backed:
 * creating a few hundred files on this disk is slow), without the network: the registry here only serves this
 * platform's binaries, and an install would test npm rather than the package.
 *
 * The layout is npm's: the tarball extracted to node_modules/agent-forge, and beside it every package its declared
 * `dependencies` bring in, transitively (npm hoists them all to the top when versions do not clash), each a link to
 * this checkout's copy. No devDependency is there unless a dependency needs it, so code that works only because the
 * checkout has it installed fails here; `declaredDependencyViolations` is the stricter check on what the code requires.
 */
export function packAndInstall(): ConsumerProject {
  const work = mkdtempSync(path.join(existsSync('/dev/shm') ? '/dev/shm' : tmpdir(), 'forge-sdk-'));
  // Readable by the sandbox's own users: a tool called through the installed package runs as one (when root).
  chmodSync(work, 0o755);
  try {
    // --ignore-scripts: pack what the build left in dist/, as the suite built it, without a prepack step of its own.
    const packed = JSON.parse(run('npm', ['pack', '--json', '--ignore-scripts', '--pack-destination', work], { cwd: ROOT })) as { filename: string }[];
    const tarball = path.join(work, packed[0].filename);

    const dir = path.join(work, 'consumer');
    const packageDir = path.join(dir, 'node_modules', 'agent-forge');
    mkdirSync(packageDir, { recursive: true });
    writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ name: 'forge-sdk-consumer', version: '1.0.0', private: true }, null, 2));
    // npm's tarballs hold everything under package/.
    run('tar', ['-xzf', tarball, '-C', packageDir, '--strip-components=1'], { cwd: work });

    // @types/node: what a TypeScript consumer installs itself (Forge's types mention NodeJS.ProcessEnv, AbortSignal).
    for (const name of new Set([...hoistedDependencies(path.join(packageDir, 'package.json')), '@types/node'])) {
      const link = path.join(dir, 'node_modules', name);
      mkdirSync(path.dirname(link), { recursive: true });
      symlinkSync(path.join(ROOT, 'node_modules', name), link, 'dir');
    }
    return { work, tarball, dir, packageDir };
  } catch (err) {
    rmSync(work, { recursive: true, force: true });
    throw err;
  }
}

/** Names in a package.json that npm installs with it (peers too, as npm 7 and later do). */
function dependencyNames(manifestPath: string): string[] {
  const m = JSON.parse(readFileSync(manifestPath, 'utf8')) as Record<string, Record<string, string> | undefined>;
  return Object.keys({ ...m.dependencies, ...m.optionalDependencies, ...m.peerDependencies });
}

/**
 * The packages npm would put at the top of a fresh project's node_modules for `manifestPath`'s dependencies: their
 * transitive closure, as far as this checkout's top level holds them (a copy nested under a dependency, for a clashing
 * version, is found through the link's real path instead).
 */
function hoistedDependencies(manifestPath: string): string[] {
  const found = new Set<string>();
  const queue = dependencyNames(manifestPath);
  for (let name = queue.pop(); name !== undefined; name = queue.pop()) {
    const dir = path.join(ROOT, 'node_modules', name);
    if (found.has(name) || !existsSync(path.join(dir, 'package.json'))) continue;
    found.add(name);
    queue.push(...dependencyNames(path.join(dir, 'package.json')));
  }
  return [...found];
}

/**
 * The bare module specifiers the shipped JavaScript loads (require and import()) that its package.json does not
 * declare as `dependencies`, as `file: specifier` lines. Node's built-ins and the package's own name are allowed.
 */
export function declaredDependencyViolations(packageDir: string, files: string[]): string[] {
  const declared = new Set(
    Object.keys((JSON.parse(readFileSync(path.join(packageDir, 'package.json'), 'utf8')) as { dependencies?: object }).dependencies ?? {}),
  );
  const violations: string[] = [];
  for (const file of files) {
    const text = readFileSync(path.join(packageDir, file), 'utf8');
    for (const m of text.matchAll(/\b(?:require|import)\(\s*['"]([^'"./][^'"]*)['"]\s*\)/g)) {
      const spec = m[1];
      const name = spec.startsWith('@') ? spec.split('/').slice(0, 2).join('/') : spec.split('/')[0];
      if (spec.startsWith('node:') || builtinModules.includes(name) || name === 'agent-forge' || declared.has(name)) continue;
      violations.push(`${file}: ${spec}`);
    }
  }
  return [...new Set(violations)];
}

/** The fenced code blocks of a Markdown text whose info string is `lang`, in order. */
export function codeBlocks(markdown: string, lang: string): string[] {
  const blocks: string[] = [];
  for (const m of markdown.matchAll(/^```([^\n`]*)\n([\s\S]*?)^```\s*$/gm)) {
    if (m[1].trim() === lang) blocks.push(m[2]);
  }
  return blocks;
}
