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

/** The form a run loads its module in (module-format.ts), and so which of a package's entries its imports load. */
type ModuleFormat = 'cjs' | 'esm';

/**
 * The packages spares preload: the configured ones, then those the tools run lately imported (most recent first),
 * at most `max` in all; each resolved to the one entry a run will load, unresolvable ones left out.
 */
export class PreloadSet {
  private readonly learned: string[] = [];
  /** The form of the latest run that imported each package. */
  private readonly formats = new Map<string, ModuleFormat>();
  /** Each package's resolved entry for the form it was last wanted in. */
  private readonly entries = new Map<string, { format: ModuleFormat; file: string | undefined }>();

  constructor(
    private readonly configured: string[],
    private readonly max: number,
  ) {}

  /** Notes the bare imports of a module a run is about to load (its compiled ES module), and the form it runs in. */
  learn(code: string, format: ModuleFormat): void {
    const imported = bareImports(code);
    for (const name of imported) {
      if (this.configured.includes(name) || this.max <= this.configured.length) continue;
      const at = this.learned.indexOf(name);
      if (at === 0) continue;
      if (at > 0) this.learned.splice(at, 1);
      this.learned.unshift(name);
    }
    this.learned.length = Math.max(0, Math.min(this.learned.length, this.max - this.configured.length));
    // Only what may still be preloaded is remembered: whatever names a stream of tools imports, this stays bounded.
    const kept = new Set([...this.configured, ...this.learned]);
    for (const name of imported) if (kept.has(name)) this.formats.set(name, format);
    for (const map of [this.formats, this.entries]) for (const name of map.keys()) if (!kept.has(name)) map.delete(name);
  }

  /**
   * The entry files to preload now: of each package the one its latest importer loads, its "require" entry when that
   * run was CommonJS (as a tool runs whenever the sandbox can make it so, module-format.ts: the default for a package
   * no run has imported yet) and its ES module entry otherwise. One, not both: the two are separate copies of the
   * package, and loading the one no run uses cost each spare as much CPU as the run itself (zod: ~100 ms here).
   */
  files(): string[] {
    return [...this.configured, ...this.learned].slice(0, this.max).flatMap((name) => this.entryOf(name).file ?? []);
  }

  /**
   * Of files(), those a startup snapshot holds (harness-snapshot.ts): the configured packages' CommonJS entries. Not
   * the learned ones, which change with the tools run lately: each change would be a new snapshot to build.
   */
  snapshotFiles(): string[] {
    return this.configured.slice(0, this.max).flatMap((name) => {
      const entry = this.entryOf(name);
      return entry.format === 'cjs' && entry.file !== undefined ? [entry.file] : [];
    });
  }

  private entryOf(name: string): { format: ModuleFormat; file: string | undefined } {
    const format = this.formats.get(name) ?? 'cjs';
    let entry = this.entries.get(name);
    if (entry?.format !== format) {
      entry = { format, file: format === 'cjs' ? cjsEntryOf(name) : esmEntryOf(name) };
      this.entries.set(name, entry);
    }
    return entry;
  }
}
