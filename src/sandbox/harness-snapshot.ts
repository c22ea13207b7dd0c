import { createHash, randomUUID } from 'node:crypto';
import { lstatSync, mkdirSync, readFileSync, readdirSync, realpathSync, rmSync, statSync } from 'node:fs';
import { rename, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { spawnThroughHelper } from '../process/spawner';
import type { SandboxLimits } from './limits';
import { harnessPath, packageRoot } from './paths';

/**
 * Startup snapshots of the sandbox harness with the preloaded packages already evaluated (harness-snapshot-entry.cjs says
 * how one is made and used). A spare booted from one skips loading zod, which cost every sandbox run ~60-80 ms of CPU:
 * a third of a small tool's run, and what kept re-verification above its CPU floor (BENCHMARKS.md).
 *
 * A blob is code every sandbox process runs, so it lives only in a directory of this user's that no one else can write
 * (checked before a blob in it is first used or built, as ssh checks its keys' directory), is made by this process
 * from the installed files, and is used only after a process started from it has answered. It is named by what it was
 * made from (Node, the flags, the harness and where it is, each package's entry and manifest): a change to any of them
 * makes another name, never a stale hit. Inside the sandbox it is bound read-only, like the harness itself.
 */

/** The Node and V8 flags a harness runs with. A snapshot is refused under any other V8 flags, so it is made with these. */
export function harnessNodeFlags(limits: Pick<SandboxLimits, 'memoryMb'>): string[] {
  // One V8 background thread, not one per core: sandboxes already run about one per core, and a tool's process
  // lives for milliseconds to seconds, so more threads only cost start-up time and oversubscribe the machine.
  // --disable-wasm-trap-handler: WebAssembly memory is then bounds-checked in code instead of by guard regions, which
  // reserve ~10 GiB of address space per memory and so fail under the run's RLIMIT_AS; without it the global fetch
  // (undici parses HTTP in WebAssembly) and any wasm package fail with "Cannot allocate Wasm memory".
  return [`--max-old-space-size=${limits.memoryMb}`, '--v8-pool-size=1', '--disable-wasm-trap-handler', '--enable-source-maps'];
}

/** The script snapshots are built from. */
function snapshotBuilderPath(): string {
  return join(packageRoot(), 'src', 'sandbox', 'harness-snapshot-entry.cjs');
}

/** Blobs kept in the directory at most (one per memory size in use, and what a package upgrade left behind). */
const KEEP_BLOBS = 4;
/** A build is ~0.5-1 s of CPU; one that takes this long is stuck. */
const BUILD_TIMEOUT_MS = 60_000;

/** The default directory: this user's, under the system's temporary directory, shared by every worker of the user. */
function defaultSnapshotDir(): string {
  return join(tmpdir(), `forge-harness-snapshots-${process.getuid?.() ?? 'user'}`);
}

export class HarnessSnapshots {
  /** Per blob path: the blob once checked, or the build under way, or why there is none. */
  private readonly state = new Map<string, { blob?: string; building?: Promise<void>; failed?: string }>();
  /** The names of what was asked for, per flags and entries (hashing reads the files: once per combination). */
  private readonly names = new Map<string, string>();

  /** Why the last build failed, for the operator and the tests; undefined while none has. */
  lastFailure: string | undefined;

  /** `log`: where a build's outcome is told (the worker's log); a build that fails leaves spares as they were. */
  constructor(
    readonly dir: string = defaultSnapshotDir(),
    private readonly log?: (line: string) => void,
  ) {}

  /**
   * The checked blob for a harness with these flags and package entries (CommonJS entry files, real paths), or
   * undefined: then one is being built (this call starts it) or cannot be, and the caller boots the usual way.
   */
  blobFor(flags: readonly string[], entries: readonly string[]): string | undefined {
    const blob = this.pathFor(flags, entries);
    if (!blob) return undefined;
    const known = this.state.get(blob);
    if (known) return known.blob;
    if (this.privateDir() && isFile(blob)) {
      this.state.set(blob, { blob });
      return blob;
    }
    const entry: { blob?: string; building?: Promise<void>; failed?: string } = {};
    entry.building = this.build(flags, entries, blob).then(
      () => {
        entry.blob = blob;
        this.log?.(`forge: sandbox spares start from a snapshot with ${entries.length} package(s) loaded: ${blob}`);
      },
      (err: Error) => {
        entry.failed = err.message;
        this.lastFailure = err.message;
        this.log?.(`forge: no sandbox snapshot (spares load their packages as files instead): ${err.message}`);
      },
    );
    this.state.set(blob, entry);
    return undefined;
  }

  /** Where the blob for these flags and entries is (or would be), named by what it is made from; undefined for none. */
  pathFor(flags: readonly string[], entries: readonly string[]): string | undefined {
    const name = entries.length > 0 ? this.nameFor(flags, entries) : undefined;
    return name && join(this.dir, `${name}.blob`);
  }

  /** A process started from `blob` died before its run: no more spares from it, and the file goes (a build replaces it). */
  distrust(blob: string): void {
    const known = this.state.get(blob);
    if (!known?.blob) return;
    this.state.set(blob, { failed: 'a process started from it died before its run' });
    rmSync(blob, { force: true });
  }

  /** Resolves once every build started so far has ended (tests; a worker's stop does not wait for them). */
  async settled(): Promise<void> {
    await Promise.all([...this.state.values()].map((s) => s.building));
  }

  private nameFor(flags: readonly string[], entries: readonly string[]): string | undefined {
    const key = JSON.stringify([flags, entries]);
    let name = this.names.get(key);
    if (name === undefined) {
      try {
        const hash = createHash('sha256');
        // The harness's own location too: a blob holds the paths it was built from, and a second install of Forge of this
        // user (another checkout, another version) whose files are the same must not take it up, die at start, and
        // so delete it under the first, which then builds it again (and the second deletes it again).
        hash.update(JSON.stringify([process.version, process.execPath, flags, entries, harnessPath(), snapshotBuilderPath()]));
        for (const file of [harnessPath(), snapshotBuilderPath(), join(dirname(harnessPath()), 'frame-mac.cjs')]) hash.update(readFileSync(file));
        // The entry and its package's manifest: an upgrade of the package changes its version, so its name.
        for (const entry of entries) hash.update(readFileSync(entry)).update(readFileSync(packageManifestOf(entry)));
        name = hash.digest('hex').slice(0, 32);
      } catch {
        name = '';
      }
      this.names.set(key, name);
    }
    return name || undefined;
  }

  /** Whether the directory exists (made if not) as this user's alone: a real directory, owned here, writable by no one else. */
  private privateDir(): boolean {
    try {
      mkdirSync(this.dir, { mode: 0o700 });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') return false;
    }
    try {
      const stat = lstatSync(this.dir);
      return stat.isDirectory() && stat.uid === process.getuid?.() && (stat.mode & 0o022) === 0;
    } catch {
      return false;
    }
  }

  private async build(flags: readonly string[], entries: readonly string[], blob: string): Promise<void> {
    if (!this.privateDir()) throw new Error(`${this.dir} is not a directory only this user can write: no harness snapshots`);
    // Its own temp file per build, not per process: two instances of this class in one process (a worker and a bench,
    // two workers of `forge up`) may build the same blob at once, and one's rename or clean-up must not take the other's.
    const temp = `${blob}.${process.pid}.${randomUUID().slice(0, 8)}.tmp`;
    try {
      const built = await spawnThroughHelper({
        file: process.execPath,
        args: ['--no-warnings', ...flags, '--snapshot-blob', temp, '--build-snapshot', snapshotBuilderPath(), harnessPath(), ...entries],
        cwd: this.dir,
        // Nothing of the worker's environment: Node needs none to build or load a snapshot.
        env: {},
        maxBuffer: 1 << 20,
        timeout: BUILD_TIMEOUT_MS,
      });
      if (built.error) throw new Error(`building a harness snapshot failed: ${built.error.message}: ${built.stderr.toString().slice(-2000)}`);
      // Used only once a process started from it, with the run's own flags, has loaded it and answered.
      const checked = await spawnThroughHelper({
        file: process.execPath,
        args: [...flags, '--snapshot-blob', temp, 'forge-snapshot-check'],
        cwd: this.dir,
        env: {},
        maxBuffer: 1 << 16,
        timeout: BUILD_TIMEOUT_MS,
      });
      if (checked.error || !/^\d+\n$/.test(checked.stdout.toString())) {
        throw new Error(`a harness snapshot did not start: ${checked.error?.message ?? ''} ${checked.stderr.toString().slice(-2000)}`);
      }
      await rename(temp, blob);
      pruneBlobs(this.dir, blob);
    } finally {
      await rm(temp, { force: true });
    }
  }
}

/** The package.json of the package a file belongs to (the nearest one up from it). */
function packageManifestOf(file: string): string {
  let dir = dirname(realpathSync(file));
  while (!isFile(join(dir, 'package.json'))) {
    const up = dirname(dir);
    if (up === dir) throw new Error(`no package.json above ${file}`);
    dir = up;
  }
  return join(dir, 'package.json');
}

function isFile(file: string): boolean {
  try {
    return statSync(file).isFile();
  } catch {
    return false;
  }
}

/** Keeps the newest KEEP_BLOBS blobs (and `keep`), and no temp file older than a build can take. */
function pruneBlobs(dir: string, keep: string): void {
  const now = Date.now();
  const files = readdirSync(dir)
    .map((name) => {
      const file = join(dir, name);
      try {
        return { file, name, mtime: statSync(file).mtimeMs };
      } catch {
        return undefined;
      }
    })
    .filter((f) => f !== undefined);
  const blobs = files.filter((f) => f.name.endsWith('.blob')).sort((a, b) => b.mtime - a.mtime);
  for (const old of blobs.slice(KEEP_BLOBS)) if (old.file !== keep) rmSync(old.file, { force: true });
  for (const temp of files) if (temp.name.endsWith('.tmp') && now - temp.mtime > BUILD_TIMEOUT_MS) rmSync(temp.file, { force: true });
}
