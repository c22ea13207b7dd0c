import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';

/**
 * Which commit a repository's HEAD is at, told without starting git: the text of `.git/HEAD`, then of whatever holds
 * the commit it names: the branch's loose ref, or a reftable repository's table list (each a few bytes, replaced
 * whole on every update), and `packed-refs` by its identity (inode, mtime, size), where a branch without a loose ref is
 * kept. Every move of HEAD (a commit, a checkout, a reset, a promotion's compare-and-swap, `git pack-refs`) changes
 * one of them, so an equal signature means the same commit. Edits to the working tree change nothing here, as they
 * change nothing of the commit. Undefined where the layout is another (no `.git` directory: a linked worktree or a
 * submodule, whose `.git` is a file, or no repository at all): the caller asks git.
 */
export function headSignature(repo: string): string | undefined {
  const gitDir = join(repo, '.git');
  let head: string;
  try {
    if (!statSync(gitDir).isDirectory()) return undefined;
    head = readFileSync(join(gitDir, 'HEAD'), 'utf8');
  } catch {
    return undefined;
  }
  const branch = /^ref: (refs\/\S+)\s*$/.exec(head)?.[1];
  const tip = branch ? textOf(join(gitDir, branch)) : '';
  // A branch that is itself a symbolic ref moves with a file this does not read.
  if (tip.startsWith('ref:')) return undefined;
  return [head.trim(), tip, textOf(join(gitDir, 'reftable', 'tables.list')), identityOf(join(gitDir, 'packed-refs'))].join('\n');
}

function textOf(file: string): string {
  try {
    return readFileSync(file, 'utf8').trim();
  } catch {
    return 'absent';
  }
}

function identityOf(file: string): string {
  try {
    const s = statSync(file, { bigint: true });
    return `${s.ino}:${s.mtimeNs}:${s.size}`;
  } catch {
    return 'absent';
  }
}
