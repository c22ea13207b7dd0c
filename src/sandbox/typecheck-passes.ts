import { createHash, randomBytes } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, statSync, unlinkSync } from 'node:fs';
import { rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

/** Most entries kept; beyond it the oldest go (one entry is the paths of the declarations a check read: ~20 KB). */
const MAX_ENTRIES = 256;
/** How many writes go by between two prunings (a pruning reads every entry's mtime). */
const PRUNE_EVERY = 32;

/**
 * Type checks that found no error, remembered on disk across processes (in FORGE_HOME): a worker restarted after a
 * crash checks again the module its predecessor had passed (the deployment's step runs again), and a cold checker
 * costs 1.5–2.5 s of CPU (parsing the lib, @types/node and the packages' types) where reading an entry costs reading
 * and hashing the ~3 MB of declarations the check read (~20 ms).
 *
 * Only passes are kept: a module with errors is checked again, so no stale rejection is ever served. A pass is served
 * only while the content of every declaration file the check read is what it was (a digest of their texts, which
 * the checker's thread computed from what it checked: typecheck-thread.cjs), whatever their modification times say
 * (npm gives every file of a package the same one). The checker's own code and TypeScript's version are in the key
 * (ToolTypechecker). A torn or foreign entry is a miss. The directory is the worker's own (FORGE_HOME is private to
 * it); a sandboxed tool never sees it.
 */
export class TypecheckPasses {
  private writes = 0;

  constructor(private readonly dir: string) {}

  /** Whether a check under `key` passed, with the content of every file it read unchanged since. Never throws. */
  passed(key: string): boolean {
    try {
      const entry = JSON.parse(readFileSync(this.entryPath(key), 'utf8')) as { files?: unknown; digest?: unknown };
      if (!Array.isArray(entry.files) || !entry.files.every((f) => typeof f === 'string') || typeof entry.digest !== 'string') return false;
      return digestOfFiles(entry.files as string[]) === entry.digest;
    } catch {
      return false;
    }
  }

  /** Remembers that the check under `key` passed, having read `files` whose digest was `digest`. Never throws. */
  async remember(key: string, files: readonly string[], digest: string): Promise<void> {
    try {
      mkdirSync(this.dir, { recursive: true, mode: 0o700 });
      const temporary = join(this.dir, `.${key}.${randomBytes(4).toString('hex')}.tmp`);
      await writeFile(temporary, JSON.stringify({ files, digest }), { mode: 0o600 });
      await rename(temporary, this.entryPath(key));
      if (this.writes++ % PRUNE_EVERY === 0) this.prune();
    } catch {
      // A full disk or a removed directory: the next restart checks again, as without this cache.
    }
  }

  private entryPath(key: string): string {
    return join(this.dir, `${key}.json`);
  }

  /** Drops the oldest entries beyond MAX_ENTRIES, and temporary files a killed writer left. */
  private prune(): void {
    const entries = readdirSync(this.dir).flatMap((name) => {
      const stat = statSync(join(this.dir, name), { throwIfNoEntry: false });
      return stat ? [{ name, mtimeMs: stat.mtimeMs }] : [];
    });
    const stale = entries.filter((e) => e.name.endsWith('.tmp') && Date.now() - e.mtimeMs > 60_000);
    const kept = entries.filter((e) => e.name.endsWith('.json')).sort((a, b) => b.mtimeMs - a.mtimeMs);
    for (const e of [...stale, ...kept.slice(MAX_ENTRIES)]) unlinkSync(join(this.dir, e.name));
  }
}

/**
 * The digest typecheck-thread.cjs's filesDigest computes, from disk: per file its name and the sha256 of its text as
 * TypeScript reads it (UTF-8, a byte order mark dropped). @throws when a file cannot be read (a miss).
 */
function digestOfFiles(files: readonly string[]): string {
  const all = createHash('sha256');
  for (const file of files) {
    const text = readFileSync(file, 'utf8');
    const digest = createHash('sha256')
      .update(text.charCodeAt(0) === 0xfeff ? text.slice(1) : text)
      .digest('hex');
    all.update(file).update('\0').update(digest).update('\0');
  }
  return all.digest('hex');
}
