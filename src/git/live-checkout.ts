import { lstat, readlink, realpath, rmdir, unlink } from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { GitCommandError, InvalidInputError, UnsafePathError } from './errors';
import { git, isAncestor, revParse } from './exec';
import { assertBranchName } from './names';
import { checkProposedPath } from './path-safety';
import { withKeyLock } from './run-lock';
import { notFastForward, swapBranch } from './merge';
import { listWorktrees, resolveCommits, settledInOrder } from './worktree';

export interface LiveCheckoutInput {
  repo: string;
  /** The target branch (short name). */
  branch: string;
  /** The commit the branch was at (the live files are expected to match it in the touched paths). */
  base: string;
  /** The commit the branch moves (or moved) to. */
  tested: string;
}

export type LiveCheckoutResult =
  /** No checkout of the repository has the branch checked out: there are no live files to bring forward. */
  | { status: 'not-checked-out' }
  /** (inspect) The touched paths hold the base's contents (or already the tested ones): advancing is safe. */
  | { status: 'ready'; checkout: string; paths: string[] }
  /** (advance) The touched paths now hold the tested contents, in the index and on disk. */
  | { status: 'advanced'; checkout: string; paths: string[] }
  /** The touched paths already held the tested contents. */
  | { status: 'up-to-date'; checkout: string; paths: string[] }
  /** Local changes in touched paths (`paths`): nothing was changed. */
  | { status: 'refused'; checkout: string; reason: string; paths: string[] };

interface Side {
  mode: string;
  oid: string;
}

/** A path the change touches: what the base and the tested commit have there (null: no file). */
interface Touched {
  path: string;
  base: Side | null;
  tested: Side | null;
}

const NO_OID = /^0+$/;

async function touchedPaths(repo: string, base: string, tested: string): Promise<Touched[]> {
  const { stdout } = await git(['diff-tree', '-r', '-z', '--no-renames', '--raw', base, tested], { cwd: repo });
  const fields = stdout.split('\0');
  const touched: Touched[] = [];
  for (let i = 0; i + 1 < fields.length; i += 2) {
    const [oldMode, newMode, oldOid, newOid] = fields[i].replace(/^:/u, '').split(' ');
    touched.push({
      path: fields[i + 1],
      base: NO_OID.test(oldOid) ? null : { mode: oldMode, oid: oldOid },
      tested: NO_OID.test(newOid) ? null : { mode: newMode, oid: newOid },
    });
  }
  return touched;
}

const same = (a: Side | null, b: Side | null, compareMode = true): boolean =>
  a === null || b === null ? a === b : a.oid === b.oid && (!compareMode || a.mode === b.mode);

/** The index entries of `paths` (stage > 0 entries are reported as a conflict marker). */
async function indexEntries(checkout: string, paths: string[]): Promise<Map<string, Side | 'conflict'>> {
  const { stdout } = await git(['ls-files', '-s', '-z', '--', ...paths], { cwd: checkout });
  const entries = new Map<string, Side | 'conflict'>();
  for (const entry of stdout.split('\0')) {
    const tab = entry.indexOf('\t');
    if (tab === -1) continue;
    const [mode, oid, stage] = entry.slice(0, tab).split(' ');
    const p = entry.slice(tab + 1);
    entries.set(p, stage === '0' && entries.get(p) !== 'conflict' ? { mode, oid } : 'conflict');
  }
  return entries;
}

/**
 * What the working tree holds at each of `paths` as a blob id (null: nothing), or 'other' (a directory, a symlink on
 * the way). The regular files are hashed together, by one git process.
 */
async function workingFiles(checkout: string, paths: readonly string[]): Promise<(Side | null | 'other')[]> {
  const found = await settledInOrder(paths.map((p) => workingEntry(checkout, p)));
  const regular = paths.filter((_, i) => isRegular(found[i]));
  const oids = regular.length === 0 ? [] : (await git(['hash-object', '--', ...regular], { cwd: checkout })).stdout.trim().split('\n');
  if (oids.length !== regular.length) throw new Error(`git hash-object gave ${oids.length} ids for ${regular.length} files`);
  let next = 0;
  return found.map((f) => (isRegular(f) ? { mode: f.executable ? '100755' : '100644', oid: oids[next++] } : f));
}

type Entry = { regular: true; executable: boolean } | Side | null | 'other';

const isRegular = (e: Entry): e is { regular: true; executable: boolean } => e !== null && e !== 'other' && 'regular' in e;

/** What is at `p`: a regular file (to be hashed), a symlink as git stores one, nothing (null), or 'other'. */
async function workingEntry(checkout: string, p: string): Promise<Entry> {
  let info;
  try {
    info = await checkProposedPath(checkout, p);
  } catch (err) {
    if (!(err instanceof UnsafePathError)) throw err;
    // A symlink as the last component is compared as git stores one (its target's text); anything else is local.
    const full = path.join(await realpath(checkout), p);
    const stats = await lstat(full).catch(() => null);
    const parent = await lstat(path.dirname(full)).catch(() => null);
    if (stats?.isSymbolicLink() && parent?.isDirectory() && !parent.isSymbolicLink()) {
      const oid = (await git(['hash-object', '--stdin'], { cwd: checkout, input: await readlink(full) })).stdout.trim();
      return { mode: '120000', oid };
    }
    return 'other';
  }
  return info.exists ? { regular: true, executable: info.executable } : null;
}

interface Classified {
  checkout: string;
  touched: Touched[];
  /** Paths whose index or working file holds neither the base's nor the tested contents. */
  local: string[];
  /** Paths whose index and working file already hold the tested contents. */
  done: string[];
}

async function findCheckout(repo: string, branch: string): Promise<string | null> {
  const ref = `refs/heads/${branch}`;
  const match = (await listWorktrees(repo)).find((w) => w.branch === ref && !w.bare && !w.prunable);
  return match ? match.path : null;
}

/** `touched`: the paths the change touches, when the caller has them already (they depend on base and tested only). */
async function classify(checkout: string, repo: string, base: string, tested: string, known?: Touched[]): Promise<Classified> {
  const touched = known ?? (await touchedPaths(repo, base, tested));
  // The index and the working files are read at once (each a git process).
  const [index, files] = await settledInOrder([
    indexEntries(
      checkout,
      touched.map((t) => t.path),
    ),
    workingFiles(
      checkout,
      touched.map((t) => t.path),
    ),
  ] as const);
  const local: string[] = [];
  const done: string[] = [];
  for (const [i, t] of touched.entries()) {
    const staged = index.get(t.path) ?? null;
    const file = files[i];
    const indexOk = staged !== 'conflict' && (same(staged, t.base) || same(staged, t.tested));
    // The working file's mode is not compared: with core.fileMode=false git itself ignores it.
    const fileOk = file !== 'other' && (same(file, t.base, false) || same(file, t.tested, false));
    if (!indexOk || !fileOk) local.push(t.path);
    else if (same(staged, t.tested) && same(file, t.tested, false)) done.push(t.path);
  }
  return { checkout, touched, local, done };
}

function refusal(checkout: string, local: string[]): Refused {
  return {
    status: 'refused',
    checkout,
    paths: local,
    reason:
      `the live checkout ${checkout} has local changes in ${local.join(', ')}, which the promoted change also changes; ` +
      'commit, stash or revert them, then promote again',
  };
}

/** The base and tested commits, resolved, and the live checkout that has the branch checked out (if any). */
async function locate(input: LiveCheckoutInput): Promise<{ base: string; tested: string; checkout: string | undefined }> {
  assertBranchName(input.branch);
  const [[base, tested], checkout] = await settledInOrder([
    resolveCommits(input.repo, [input.base, input.tested]),
    findCheckout(input.repo, input.branch),
  ] as const);
  return { base, tested, checkout: checkout ?? undefined };
}

/**
 * Whether the live checkout that has `branch` checked out (if any) can be brought from `base` to `tested`: every path
 * the change touches must hold, in the index and on disk, the base's contents or already the tested ones. Changes
 * nothing. Call it before the compare-and-swap, so a refusal leaves the branch where it was too.
 */
export async function inspectLiveCheckout(input: LiveCheckoutInput): Promise<LiveCheckoutResult> {
  const { base, tested, checkout } = await locate(input);
  if (!checkout) return { status: 'not-checked-out' };
  const c = await classify(checkout, input.repo, base, tested);
  if (c.local.length > 0) return refusal(checkout, c.local);
  const paths = c.touched.map((t) => t.path);
  return c.done.length === paths.length ? { status: 'up-to-date', checkout, paths } : { status: 'ready', checkout, paths };
}

/** A git command that writes the live checkout's index, waiting briefly while the user's own git holds index.lock. */
async function writeIndex(checkout: string, args: string[], input?: string): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      await git(args, { cwd: checkout, input });
      return;
    } catch (err) {
      if (!(err instanceof GitCommandError) || !err.stderr.includes('index.lock') || attempt >= 20) throw err;
      await sleep(100);
    }
  }
}

/** Removes a file the tested commit deletes, then its directories up to the checkout's root while they are empty. */
async function removeFile(checkout: string, p: string): Promise<void> {
  const root = await realpath(checkout);
  await unlink(path.join(root, p)).catch((err: NodeJS.ErrnoException) => {
    if (err.code !== 'ENOENT') throw err;
  });
  for (let dir = path.dirname(p); dir !== '.'; dir = path.dirname(dir)) {
    if (
      !(await rmdir(path.join(root, dir)).then(
        () => true,
        () => false,
      ))
    )
      break;
  }
}

/**
 * Brings the live checkout that has `branch` checked out from `base` to `tested` in the paths the change touches, in
 * its index and on disk, after the branch was moved to `tested` (compare-and-swap). Local changes elsewhere are kept;
 * local changes in a touched path refuse the whole step and change nothing. Idempotent: paths already at the tested
 * contents are left alone, and a step interrupted half-way is completed by the next call.
 * @throws InvalidInputError when the branch does not contain `tested` yet (merge first)
 */
export async function advanceLiveCheckout(input: LiveCheckoutInput): Promise<LiveCheckoutResult> {
  const { base, tested, checkout } = await locate(input);
  if (!checkout) return { status: 'not-checked-out' };
  return withLiveLock(checkout, async () => {
    const head = await revParse(input.repo, `refs/heads/${input.branch}^{commit}`);
    if (!head || !(await isAncestor(input.repo, tested, head))) {
      throw new InvalidInputError('tested', tested, `the branch ${input.branch} does not contain it yet; move the branch first`);
    }
    return advanceLocked(checkout, input.repo, input.branch, base, tested);
  });
}

/** Writes to one live checkout's index and files take turns (within this process). */
async function withLiveLock<T>(checkout: string, work: () => Promise<T>): Promise<T> {
  return withKeyLock(`live\0${await realpath(checkout)}`, work);
}

/**
 * The advance itself, under the checkout's lock, once the branch is known to contain `tested`. The checkout is looked
 * up again beside the reads: one that has switched to another branch since it was located is left alone.
 */
async function advanceLocked(checkout: string, repo: string, branch: string, base: string, tested: string, touched?: Touched[]): Promise<LiveCheckoutResult> {
  const [c, still] = await settledInOrder([classify(checkout, repo, base, tested, touched), findCheckout(repo, branch)] as const);
  if (still !== checkout) return { status: 'not-checked-out' };
  if (c.local.length > 0) return refusal(checkout, c.local);
  const paths = c.touched.map((t) => t.path);
  const pending = c.touched.filter((t) => !c.done.includes(t.path));
  if (pending.length === 0) return { status: 'up-to-date', checkout, paths };

  const zeros = '0'.repeat(tested.length);
  // --index-info: `<mode> <oid>\t<path>`, and mode 0 removes the entry.
  const entries = pending.map((t) => (t.tested ? `${t.tested.mode} ${t.tested.oid}\t${t.path}\0` : `0 ${zeros}\t${t.path}\0`)).join('');
  await writeIndex(checkout, ['update-index', '-z', '--index-info'], entries);
  const written = pending.filter((t) => t.tested).map((t) => t.path);
  // checkout-index writes through git's own checks (never beyond a symlink) and records the new files' stats.
  if (written.length > 0) await writeIndex(checkout, ['checkout-index', '-f', '-u', '--', ...written]);
  for (const t of pending.filter((x) => !x.tested)) await removeFile(checkout, t.path);
  return { status: 'advanced', checkout, paths };
}

type Refused = Extract<LiveCheckoutResult, { status: 'refused' }>;

export type MergeIntoBranchResult =
  /** The live checkout has local changes in touched paths: nothing was moved or written. */
  | { status: 'refused'; live: Refused }
  /** The branch is at neither base nor tested (null: deleted): rebase and verify again. Nothing was written. */
  | { status: 'branch-moved'; head: string | null }
  /** The branch holds `tested` (moved by this call, or by an earlier one); `live` is what became of the live files. */
  | { status: 'merged' | 'already-merged'; commit: string; live: LiveCheckoutResult };

/**
 * The merge of a promotion in one call: {@link inspectLiveCheckout} → {@link compareAndSwapBranch} →
 * {@link advanceLiveCheckout}, with the same verdicts, each read done once and the independent ones at once (every git
 * command is a process: this is 7 rounds of them where the three calls take 13). Idempotent as they are: a call after
 * an interrupted one finds the branch already merged and completes the live files.
 * @throws InvalidInputError when `tested` does not descend from `base`
 */
export async function mergeIntoBranch(input: LiveCheckoutInput & { reason?: string }): Promise<MergeIntoBranchResult> {
  const { base, tested, checkout } = await locate(input);
  const [inspected, fastForward] = await settledInOrder([
    checkout ? classify(checkout, input.repo, base, tested) : Promise.resolve(undefined),
    isAncestor(input.repo, base, tested),
  ] as const);
  // As inspect-then-swap would: a refusal before the fast-forward check.
  if (inspected && inspected.local.length > 0) return { status: 'refused', live: refusal(inspected.checkout, inspected.local) };
  if (!fastForward) throw notFastForward(input.branch, base, tested);
  const swap = await swapBranch(input.repo, input.branch, base, tested, input.reason);
  if (swap.status === 'branch-moved') return { status: 'branch-moved', head: swap.head };
  // The branch holds `tested` now (this swap, or an earlier one's: swapBranch checked), as the advance requires.
  const live: LiveCheckoutResult = inspected
    ? await withLiveLock(inspected.checkout, () => advanceLocked(inspected.checkout, input.repo, input.branch, base, tested, inspected.touched))
    : { status: 'not-checked-out' };
  return { status: swap.status, commit: tested, live };
}
