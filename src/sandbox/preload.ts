import { readFileSync, realpathSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { projectNodeModules } from './paths';

/**
 * Which installed packages a spare sandbox process loads while it waits for its run (issue 15): importing zod costs a
 * fresh Node ~45–70 ms, most of a small tool's run. A spare that has loaded it hands the tool the very module its
 * `require('zod')` (CommonJS cache) or `import 'zod'` (Node's ESM cache, shared with require(esm) since Node 20.19)
 * resolves to, so the tool's import is a cache hit. Nothing of isolation changes: a spare still serves one run, and the code it preloads is the installed
 * package a tool would load anyway, loaded before any tool code exists.
 */

/** Bare package names in a compiled ES module's static imports (`import ... from 'zod'`, `import 'pkg/sub'`). */
export function bareImports(code: string): string[] {
  const names = new Set<string>();
  for (const m of code.matchAll(/(?:^|[\s;])(?:import|export)\s*(?:[^'";]*?\sfrom\s*)?["']([^"'./][^"']*)["']/g)) {
    const spec = m[1];
    if (spec.startsWith('node:')) continue;
    const parts = spec.split('/');
    names.add(spec.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0]);
  }
  return [...names];
}

/**
 * The file Node's ESM loader runs for a bare import of the package `name` from a module beside `nodeModules`: the
 * package's `exports` "import" (or "default") entry of ".", else `module`, else `main`; undefined when it is not
 * installed or has no root entry. Real paths, as the loader keys its cache.
 */
export function esmEntryOf(name: string, nodeModules = projectNodeModules()): string | undefined {
  try {
    // Where a run's bare import looks first: its directory's node_modules, a link to this one (not require.resolve of
    // `<name>/package.json`, which a package's `exports` may not allow).
    const pkgJson = join(nodeModules, name, 'package.json');
    const pkg = JSON.parse(readFileSync(pkgJson, 'utf8')) as { exports?: unknown; module?: string; main?: string };
    const root =
      typeof pkg.exports === 'object' && pkg.exports !== null && !Array.isArray(pkg.exports) && '.' in pkg.exports
        ? (pkg.exports as Record<string, unknown>)['.']
        : pkg.exports;
    const entry = pick(root) ?? pkg.module ?? pkg.main;
    return entry ? realpathSync(join(dirname(pkgJson), entry)) : undefined;
  } catch {
    return undefined;
  }
}

/** The "import" (else "node", else "default") target of an exports condition map, following nested maps. */
function pick(target: unknown): string | undefined {
  if (typeof target === 'string') return target;
  if (!target || typeof target !== 'object' || Array.isArray(target)) return undefined;
  const map = target as Record<string, unknown>;
  for (const condition of ['import', 'node', 'default']) {
    const found = pick(map[condition]);
    if (found) return found;
  }
  return undefined;
}

/**
 * The file a require of the package `name` loads from a module beside `nodeModules` (its "require" entry), real
 * path, as CommonJS keys its cache; undefined when it has none.
 */
function cjsEntryOf(name: string, nodeModules = projectNodeModules()): string | undefined {
  try {
    return realpathSync(createRequire(join(nodeModules, '_')).resolve(name));
  } catch {
    return undefined;
  }
}

/**
 * The packages spares preload: the configured ones, then those the tools run lately imported (most recent first),
 * at most `max` in all; each resolved to its ES module entry, unresolvable ones left out.
 */
export class PreloadSet {
  private readonly learned: string[] = [];
  private readonly entries = new Map<string, string[]>();

  constructor(
    private readonly configured: string[],
    private readonly max: number,
  ) {}

  /** Notes the bare imports of a module a run is about to load. */
  learn(code: string): void {
    if (this.max <= this.configured.length) return;
    for (const name of bareImports(code)) {
      if (this.configured.includes(name)) continue;
      const at = this.learned.indexOf(name);
      if (at === 0) continue;
      if (at > 0) this.learned.splice(at, 1);
      this.learned.unshift(name);
    }
    this.learned.length = Math.min(this.learned.length, this.max - this.configured.length);
  }

  /**
   * The entry files to preload now: both of each package's, since a tool runs as CommonJS when the sandbox can make it
   * so (src/sandbox/module-format.ts: its `require('zod')` loads the "require" entry) and as an ES module otherwise.
   */
  files(): string[] {
    const files: string[] = [];
    for (const name of [...this.configured, ...this.learned].slice(0, this.max)) {
      let found = this.entries.get(name);
      if (!found) {
        found = [...new Set([cjsEntryOf(name), esmEntryOf(name)].filter((f): f is string => f !== undefined))];
        this.entries.set(name, found);
      }
      files.push(...found);
    }
    return files;
  }
}
