import { GitCommandError } from './errors';
import { spawnThroughHelper, type SpawnOutcome } from '../process/spawner';

/** The longest any one git command may run before it is killed (bounded everything: git included). */
const GIT_TIMEOUT_MS = 120_000;

/**
 * Configuration every Forge git command runs with, whatever the repository or the user configures: no hooks (a hook
 * is code Forge did not choose to run), no fsmonitor daemon (it would outlive the worktree), no automatic gc in the
 * background, no signing (it would make commits non-deterministic, so not idempotent).
 */
const FIXED_CONFIG = [
  '-c',
  'core.hooksPath=/dev/null',
  '-c',
  'core.fsmonitor=false',
  '-c',
  'gc.auto=0',
  '-c',
  'maintenance.auto=false',
  '-c',
  'commit.gpgSign=false',
];

export interface GitOptions {
  /** The directory git runs in (a repository, a worktree). */
  cwd: string;
  /** Variables added to the (cleaned) environment, e.g. GIT_INDEX_FILE or the author identity. */
  env?: Record<string, string>;
  /** Written to git's stdin (then closed). */
  input?: string | Buffer;
  /** Exit codes that are answers rather than failures (e.g. 1 from `merge-base --is-ancestor`). 0 always is. */
  okExitCodes?: readonly number[];
  timeoutMs?: number;
}

export interface GitResult {
  stdout: string;
  stderr: string;
  exitCode: number;
}

/**
 * The environment git sees: the caller's, minus every GIT_* variable (inside a hook or a test runner they would point
 * git at another repository or index), with prompts off, stable English messages and no optional index locks (so a
 * read such as `git status` in the live checkout never writes its index). Pathspecs are literal: a proposed path with
 * `*` or `:(` in it names that file, nothing else.
 */
function gitEnv(extra: Record<string, string> | undefined): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env)) if (!key.startsWith('GIT_')) env[key] = value;
  const fixed = { LC_ALL: 'C', LANGUAGE: 'C', GIT_TERMINAL_PROMPT: '0', GIT_OPTIONAL_LOCKS: '0', GIT_LITERAL_PATHSPECS: '1' };
  return { ...env, ...fixed, ...extra };
}

async function run(
  args: readonly string[],
  options: GitOptions,
  encoding: 'utf8' | 'buffer',
): Promise<{ stdout: string | Buffer; stderr: string; exitCode: number }> {
  const argv = [...FIXED_CONFIG, ...args];
  let outcome: SpawnOutcome;
  try {
    // Through the helper process (spawner.ts): a git command started from a worker's large process costs ~20 ms
    // before git runs, from the helper ~3 ms.
    outcome = await spawnThroughHelper({
      file: 'git',
      args: argv,
      cwd: options.cwd,
      env: gitEnv(options.env),
      input: options.input,
      maxBuffer: 256 * 1024 * 1024,
      timeout: options.timeoutMs ?? GIT_TIMEOUT_MS,
    });
  } catch (err) {
    // The helper went away with the command in flight (or could not be started): whether git ran is unknown.
    throw new GitCommandError(args, options.cwd, null, (err as Error).message, null, { cause: err });
  }
  const stderr = outcome.stderr.toString('utf8');
  const stdout = encoding === 'utf8' ? outcome.stdout.toString('utf8') : outcome.stdout;
  const error = outcome.error;
  if (!error) return { stdout, stderr, exitCode: 0 };
  const code = error.code;
  if (typeof code === 'number' && (options.okExitCodes ?? []).includes(code)) return { stdout, stderr, exitCode: code };
  const cause = Object.assign(new Error(error.message), { code, signal: error.signal });
  throw new GitCommandError(args, options.cwd, typeof code === 'number' ? code : null, stderr, error.signal, { cause });
}

/** Runs `git <args>` (no shell) and returns its output as text. @throws GitCommandError on an unexpected exit. */
export async function git(args: readonly string[], options: GitOptions): Promise<GitResult> {
  const result = await run(args, options, 'utf8');
  return { stdout: result.stdout as string, stderr: result.stderr, exitCode: result.exitCode };
}

/** Like {@link git}, with stdout as bytes (blob contents). */
export async function gitBytes(args: readonly string[], options: GitOptions): Promise<Buffer> {
  return (await run(args, options, 'buffer')).stdout as Buffer;
}

/** The object id `rev` names (`<rev>^{commit}` etc. allowed), or null when there is none. */
export async function revParse(cwd: string, rev: string): Promise<string | null> {
  const { stdout, exitCode } = await git(['rev-parse', '--verify', '--quiet', '--end-of-options', rev], { cwd, okExitCodes: [1] });
  return exitCode === 0 ? stdout.trim() : null;
}

/** Whether `ancestor` is `descendant` or one of its ancestors. */
export async function isAncestor(cwd: string, ancestor: string, descendant: string): Promise<boolean> {
  const { exitCode } = await git(['merge-base', '--is-ancestor', ancestor, descendant], { cwd, okExitCodes: [1] });
  return exitCode === 0;
}
