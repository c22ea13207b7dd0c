import { chmodSync, lstatSync, mkdirSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { PRIVATE_DIR_MODE } from '../contract/private-modes';

/** Group and other permissions: what making a path private takes away. */
const SHARED_BITS = 0o077;

/**
 * Takes group and other permissions off `root` and everything below it, and returns the paths it changed (relative to
 * `root`, `.` for itself). Owner bits stay as they are (the temporal CLI that setup installs under FORGE_HOME stays
 * executable). Symbolic links are neither followed nor changed: chmod acts on a link's target, and
 * agent-repo/node_modules points at Forge's own packages. Entries that vanish meanwhile (a worker writing beside this
 * walk) or that this user may not change are left as they are. Synchronous: ~10 ms for a home of 2,000 entries.
 * `reachableOnly`: only what others could reach, i.e. it does not descend into a directory that was already private
 * (what a start needs; a directory whose files were created with shared modes, PGlite's new data directory, is
 * walked whole).
 */
export function tightenTree(root: string, options: { reachableOnly?: boolean } = {}): string[] {
  const changed: string[] = [];
  const visit = (full: string, rel: string): void => {
    let mode: number;
    let isDirectory: boolean;
    try {
      const st = lstatSync(full);
      if (st.isSymbolicLink()) return;
      mode = st.mode & 0o7777;
      isDirectory = st.isDirectory();
    } catch {
      return;
    }
    if ((mode & SHARED_BITS) !== 0) {
      try {
        chmodSync(full, mode & ~SHARED_BITS);
        changed.push(rel);
      } catch {
        // Not ours to change (another user's file), or gone: the directory above it is what keeps others out.
      }
    }
    // A directory that gave others nothing keeps everything below it out of their reach whatever its modes: with
    // `reachableOnly` the walk stops there, so a start does not lstat every file of 5,000 tools (~2 s) to find none.
    if (!isDirectory || (options.reachableOnly && (mode & SHARED_BITS) === 0)) return;
    let names: string[];
    try {
      names = readdirSync(full);
    } catch {
      return;
    }
    for (const name of names) visit(path.join(full, name), rel === '.' ? name : path.join(rel, name));
  };
  visit(root, '.');
  return changed;
}

/**
 * Makes Forge's state private to the user Forge runs as, before anything is written there: FORGE_HOME is created 0700
 * when missing; an existing one, and agent-tools/ where it lies outside it, lose every group and other permission (an
 * earlier Forge created them 0755 and their files 0644, and a tool run as an ordinary user read 59 files of FORGE_HOME).
 * What it had to change is said in `log`, once per directory. `forge up`, `forge worker` and startForge call it first.
 */
export function makeStatePrivate(dirs: { home: string; agentToolsDir: string }, log: (line: string) => void): void {
  const inHome = (dir: string) => !path.relative(dirs.home, dir).startsWith('..') && !path.isAbsolute(path.relative(dirs.home, dir));
  mkdirSync(dirs.home, { recursive: true, mode: PRIVATE_DIR_MODE });
  for (const [label, dir] of [
    ['FORGE_HOME', dirs.home],
    ['agent-tools/', dirs.agentToolsDir],
  ] as const) {
    if (label !== 'FORGE_HOME' && inHome(dir)) continue;
    const changed = tightenTree(dir, { reachableOnly: true });
    if (changed.length === 0) continue;
    const shown = changed.slice(0, 3).join(', ') + (changed.length > 3 ? ', ...' : '');
    log(
      `forge: ${label} at ${dir} had ${changed.length} path(s) other users could read or enter (${shown}); made them private to this user (no group or other permissions)`,
    );
  }
}
