/** One problem in forge.verify.json: `field` is a path such as `stages.compile[0].argv`. */
export interface VerifyPlanIssue {
  field: string;
  message: string;
}

/** Thrown when forge.verify.json is missing, is not JSON, or does not have the plan's shape; `issues` name the fields. */
export class VerifyPlanError extends Error {
  override readonly name = 'VerifyPlanError';
  constructor(
    /** The plan file (or `forge.verify.json` when the plan came as a value). */
    readonly file: string,
    readonly issues: VerifyPlanIssue[],
    options?: { cause?: unknown },
  ) {
    const listed = issues.slice(0, 5).map((i) => (i.field === '' ? i.message : `${i.field}: ${i.message}`));
    const more = issues.length > 5 ? `; and ${issues.length - 5} more` : '';
    super(`${file} is not a valid verification plan: ${listed.join('; ')}${more}`, options);
  }
}

/** Thrown when a changed path matches no glob of the plan: verification fails closed. `path` is the first such path. */
export class UnmappedPathError extends Error {
  override readonly name = 'UnmappedPathError';
  constructor(
    readonly path: string,
    /** Every changed path that no rule maps, in the order given. */
    readonly unmapped: string[],
  ) {
    const others = unmapped.length > 1 ? ` (and ${unmapped.length - 1} other unmapped path(s))` : '';
    super(`No rule of the verification plan maps the changed path ${JSON.stringify(path)}${others}, so it cannot be verified.`);
  }
}

/** Thrown when a proposed path is not a plain relative path inside the repository, or would go through a symlink. */
export class UnsafePathError extends Error {
  override readonly name = 'UnsafePathError';
  constructor(
    /** The path as proposed. */
    readonly path: string,
    /** Why it is refused, in words an agent can act on. */
    readonly reason: string,
  ) {
    super(`The path ${JSON.stringify(path)} is refused: ${reason}.`);
  }
}

/** Thrown when a change changes nothing: no paths, or contents equal to what the base commit already has. */
export class EmptyChangeError extends Error {
  override readonly name = 'EmptyChangeError';
  constructor(reason: string) {
    super(`Nothing to promote: ${reason}.`);
  }
}

/** Thrown when a git command fails in a way the caller did not expect (an infrastructure error: retry may help). */
export class GitCommandError extends Error {
  override readonly name = 'GitCommandError';
  constructor(
    readonly args: readonly string[],
    readonly cwd: string,
    /** The exit code, or null when git was killed (`signal`) or could not start. */
    readonly exitCode: number | null,
    readonly stderr: string,
    readonly signal: string | null = null,
    options?: { cause?: unknown },
  ) {
    const how = exitCode !== null ? `exit code ${exitCode}` : signal ? `signal ${signal}` : 'failed to start';
    const detail = stderr.trim().split('\n').slice(-3).join(' | ');
    super(`git ${args.join(' ')} (in ${cwd}) failed with ${how}${detail ? `: ${detail}` : ''}`, options);
  }
}

/** Thrown when a branch that must exist does not (e.g. the target branch of a promotion). */
export class BranchNotFoundError extends Error {
  override readonly name = 'BranchNotFoundError';
  constructor(
    readonly repo: string,
    readonly branch: string,
  ) {
    super(`The branch ${branch} does not exist in ${repo}.`);
  }
}

/** Thrown when an argument cannot be used: a bad branch name or run id, an empty message, a malformed identity. */
export class InvalidInputError extends Error {
  override readonly name = 'InvalidInputError';
  constructor(
    /** Which argument: `branch`, `runId`, `message`, `identity`, `date`, `commit`... */
    readonly field: string,
    readonly value: unknown,
    readonly reason: string,
  ) {
    const shown = typeof value === 'string' ? ` ${JSON.stringify(value.length > 200 ? `${value.slice(0, 200)}…` : value)}` : '';
    super(`The ${field}${shown} is not usable: ${reason}.`);
  }
}

/** Thrown when a commit id or name does not resolve to a commit in the repository. */
export class CommitNotFoundError extends Error {
  override readonly name = 'CommitNotFoundError';
  constructor(
    readonly repo: string,
    readonly rev: string,
  ) {
    super(`${JSON.stringify(rev)} is not a commit of ${repo}.`);
  }
}

/** Thrown when the worktree root would be inside the live checkout (worktrees must live outside it). */
export class WorktreeRootError extends Error {
  override readonly name = 'WorktreeRootError';
  constructor(
    readonly root: string,
    reason: string,
  ) {
    super(`The worktree root ${root} cannot be used: ${reason}.`);
  }
}

/**
 * Thrown when the run's branch or worktree already holds something other than what this call would produce: the same
 * run id was used for another change, or someone moved it by hand. Never retried into success.
 */
export class RunStateConflictError extends Error {
  override readonly name = 'RunStateConflictError';
  constructor(
    readonly runId: string,
    readonly what: string,
  ) {
    super(`Run ${runId}: ${what}`);
  }
}
