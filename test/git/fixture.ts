import { execFile } from 'node:child_process';
import { accessSync, constants } from 'node:fs';
import { cp, mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

export const EXAMPLE_REPO = path.join(__dirname, '..', '..', 'examples', 'agent-repo');
export const FORGE_NODE_MODULES = path.join(__dirname, '..', '..', 'node_modules');
export const IDENTITY = { name: 'Forge', email: 'forge@localhost' };
/** A fixed time, so commits made in tests are reproducible. */
export const DATE = Date.UTC(2025, 0, 2, 3, 4, 5);

/** tmpfs when there is one: creating repositories and worktrees there is far faster than on this disk. */
function scratchParent(): string {
  try {
    accessSync('/dev/shm', constants.W_OK);
    return '/dev/shm';
  } catch {
    return tmpdir();
  }
}

/** Runs git in `cwd` as a person working by hand would (own identity, no Forge wrapper); returns trimmed stdout. */
export async function sh(cwd: string, ...args: string[]): Promise<string> {
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env)) if (!key.startsWith('GIT_')) env[key] = value;
  Object.assign(env, {
    GIT_AUTHOR_NAME: 'Human',
    GIT_AUTHOR_EMAIL: 'human@example.com',
    GIT_COMMITTER_NAME: 'Human',
    GIT_COMMITTER_EMAIL: 'human@example.com',
  });
  const { stdout } = await run('git', ['-c', 'init.defaultBranch=main', '-c', 'core.hooksPath=/dev/null', ...args], { cwd, env, maxBuffer: 64 * 1024 * 1024 });
  return stdout.trim();
}

export interface Sandbox {
  /** The scratch directory holding everything below. */
  dir: string;
  /** A git repository: a copy of examples/agent-repo with one commit on main, checked out. */
  repo: string;
  /** The worktree root the tests pass to the functions under test (not created yet). */
  root: string;
  /** The commit of main. */
  base: string;
  dispose(): Promise<void>;
}

/** A fresh copy of examples/agent-repo, made a git repository with one commit on `main`. */
export async function agentRepo(): Promise<Sandbox> {
  const dir = await mkdtemp(path.join(scratchParent(), 'forge-git-test-'));
  const repo = path.join(dir, 'repo');
  await cp(EXAMPLE_REPO, repo, { recursive: true, filter: (src) => !/[/\\](node_modules|dist)$/.test(src) });
  await sh(repo, 'init', '-q');
  await sh(repo, 'add', '-A');
  await sh(repo, 'commit', '-q', '-m', 'The example agent');
  const base = await sh(repo, 'rev-parse', 'HEAD');
  return { dir, repo, root: path.join(dir, 'worktrees'), base, dispose: () => rm(dir, { recursive: true, force: true }) };
}

/** Commits `files` on the checked-out branch of `repo` by hand (as a person moving the branch would). */
export async function commitByHand(repo: string, files: Record<string, string>, message = 'by hand'): Promise<string> {
  for (const [rel, content] of Object.entries(files)) {
    await mkdir(path.dirname(path.join(repo, rel)), { recursive: true });
    await writeFile(path.join(repo, rel), content);
  }
  await sh(repo, 'add', '--', ...Object.keys(files));
  await sh(repo, 'commit', '-q', '-m', message);
  return sh(repo, 'rev-parse', 'HEAD');
}

/** What `git worktree list`, `git branch --list 'forge/promote/*'` and the root directory show. */
export async function visibleLeftovers(s: Sandbox): Promise<{ worktrees: string[]; branches: string; rootEntries: string[] }> {
  const worktrees = (await sh(s.repo, 'worktree', 'list', '--porcelain'))
    .split('\n')
    .filter((l) => l.startsWith('worktree '))
    .map((l) => l.slice('worktree '.length));
  const branches = await sh(s.repo, 'branch', '--list', 'forge/promote/*');
  const rootEntries = await readdir(s.root).catch(() => []);
  return { worktrees, branches, rootEntries };
}
