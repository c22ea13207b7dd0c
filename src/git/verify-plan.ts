import { z } from 'zod';
import { PROMOTION_STAGES, type PromotionStage } from '../contract/promotion-runs';
import { TOOL_NAME_PATTERN, TOOL_NAME_RULE } from '../contract/tool-name';
import { EmptyChangeError, UnmappedPathError, UnsafePathError, VerifyPlanError, type VerifyPlanIssue } from './errors';
import { git, revParse } from './exec';
import { compileGlob, globSyntaxError } from './glob';
import { assertSafeRelativePath } from './path-safety';

/** The plan file, at the root of the agent's repository. */
const VERIFY_PLAN_FILE = 'forge.verify.json';

/** A stage of a verification: the contract's {@link PromotionStage}, by its old name. */
type StageName = PromotionStage;

/**
 * An argv element that is exactly this stands for the changed paths the rule matched, one argv element each (never
 * joined into one string, never given to a shell). It may appear once per argv, not as argv[0], not inside a word.
 */
const CHANGED_FILES_PLACEHOLDER = '{changedFiles}';

const relativePath = z.string().superRefine((value, ctx) => {
  try {
    assertSafeRelativePath(value);
  } catch (err) {
    ctx.addIssue({ code: 'custom', message: err instanceof UnsafePathError ? err.reason : String(err) });
  }
});

const glob = z.string().superRefine((value, ctx) => {
  const error = globSyntaxError(value);
  if (error) ctx.addIssue({ code: 'custom', message: error });
});

const argv = z
  .array(
    z
      .string()
      .min(1, 'an argument may not be empty')
      .refine((s) => !s.includes('\0'), 'an argument may not contain a NUL character'),
  )
  .min(1, 'a command needs at least the program (argv[0])')
  .superRefine((args, ctx) => {
    let placeholders = 0;
    args.forEach((arg, i) => {
      if (arg === CHANGED_FILES_PLACEHOLDER) {
        placeholders++;
        if (i === 0) ctx.addIssue({ code: 'custom', path: [i], message: `${CHANGED_FILES_PLACEHOLDER} cannot be the program` });
        else if (placeholders === 2) ctx.addIssue({ code: 'custom', path: [i], message: `${CHANGED_FILES_PLACEHOLDER} may appear once` });
      } else if (arg.includes(CHANGED_FILES_PLACEHOLDER)) {
        ctx.addIssue({ code: 'custom', path: [i], message: `${CHANGED_FILES_PLACEHOLDER} must be a whole argument, not part of one` });
      }
    });
  });

const rule = z.strictObject({
  /** Globs (see glob.ts) of the changed paths this rule verifies. */
  paths: z.array(glob).min(1, 'a rule needs at least one glob'),
  /** The command, as an argv array run in the worktree's root. */
  argv,
  /** Wall-clock limit of the command (the sandbox's default when absent). */
  timeoutMs: z.int().min(1_000).max(3_600_000).optional(),
  /** Memory limit for the command's whole process tree (the sandbox's default when absent). */
  memoryMb: z.int().min(64).max(65_536).optional(),
});

const planSchema = z.strictObject({
  $schema: z.string().optional(),
  $comment: z.string().optional(),
  version: z.literal(1),
  /**
   * Built-in tool name → the source file that defines it. The names follow the rule of every tool name, so deployed
   * tools can be compared with them.
   */
  builtinTools: z.record(z.string().regex(TOOL_NAME_PATTERN, `a tool name must ${TOOL_NAME_RULE}`), relativePath),
  stages: z.strictObject({
    compile: z.array(rule),
    targetedTests: z.array(rule),
    startupSmoke: z.array(rule),
  }),
});

/** A parsed, valid forge.verify.json. */
export type VerifyPlan = z.infer<typeof planSchema>;

/** `stages.compile[0].argv[2]`, `builtinTools["a b"]`. */
function formatField(path: readonly PropertyKey[]): string {
  let out = '';
  for (const key of path) {
    if (typeof key === 'number') out += `[${key}]`;
    else if (typeof key === 'string' && /^[A-Za-z_$][\w$]*$/u.test(key)) out += out === '' ? key : `.${key}`;
    else out += `[${JSON.stringify(String(key))}]`;
  }
  return out;
}

function toIssues(error: z.ZodError): VerifyPlanIssue[] {
  return error.issues.flatMap((issue): VerifyPlanIssue[] => {
    if (issue.code === 'unrecognized_keys') {
      return issue.keys.map((key) => ({ field: formatField([...issue.path, key]), message: 'unknown field' }));
    }
    if (issue.code === 'invalid_key') {
      // zod says only "Invalid key in record"; what is wrong with the key is in its own issues.
      return [{ field: formatField(issue.path), message: issue.issues.map((i) => i.message).join('; ') || issue.message }];
    }
    return [{ field: formatField(issue.path), message: issue.message }];
  });
}

/**
 * Validates a plan given as a value (e.g. the parsed JSON).
 * @param file the name used in the error message
 * @throws VerifyPlanError whose `issues` name each bad field (`stages.compile[0].argv`)
 */
export function parseVerifyPlan(value: unknown, file: string = VERIFY_PLAN_FILE): VerifyPlan {
  const result = planSchema.safeParse(value);
  if (!result.success) throw new VerifyPlanError(file, toIssues(result.error));
  return result.data;
}

/** Parses and validates the text of a plan file. @throws VerifyPlanError (also for text that is not JSON) */
export function parseVerifyPlanText(text: string, file: string = VERIFY_PLAN_FILE): VerifyPlan {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    throw new VerifyPlanError(file, [{ field: '', message: `not valid JSON (${(err as Error).message})` }], { cause: err });
  }
  return parseVerifyPlan(value, file);
}

const FULL_OBJECT_ID = /^(?:[0-9a-f]{40}|[0-9a-f]{64})$/;

/**
 * Reads forge.verify.json as committed at `commit` (a commit id or a branch), so a change is always verified by the
 * plan of its base, never by a plan it brings itself.
 * @throws VerifyPlanError when the commit has no plan file or it is invalid
 */
export async function readVerifyPlan(repo: string, commit: string): Promise<VerifyPlan> {
  const file = `${commit}:${VERIFY_PLAN_FILE}`;
  const read = (id: string) => git(['cat-file', 'blob', `${id}:${VERIFY_PLAN_FILE}`], { cwd: repo, okExitCodes: [128] });
  // A full object id names one commit for good: then the file is read while the id is checked (two git processes at
  // once). A branch is resolved first, so that the plan read is the one of the commit it pointed at.
  const early = FULL_OBJECT_ID.test(commit) ? read(commit) : undefined;
  early?.catch(() => undefined);
  const id = await revParse(repo, `${commit}^{commit}`);
  if (!id) throw new VerifyPlanError(file, [{ field: '', message: `cannot be read (${JSON.stringify(commit)} is not a commit)` }]);
  const { stdout, exitCode, stderr } = await (early ?? read(id));
  if (exitCode !== 0) {
    throw new VerifyPlanError(file, [{ field: '', message: `cannot be read (${stderr.trim() || 'no such file'})` }]);
  }
  return parseVerifyPlanText(stdout, file);
}

/** The names the plan declares as built-in, sorted: deployed (agent-authored) tools may not take them. */
export function builtinToolNames(plan: VerifyPlan): string[] {
  return Object.keys(plan.builtinTools).sort();
}

/** One command to run for a stage, with the changed paths already in its argv. */
export interface StageCommand {
  stage: StageName;
  /** Index of the rule in `stages.<stage>` that produced it. */
  rule: number;
  argv: string[];
  timeoutMs?: number;
  memoryMb?: number;
  /** The changed paths this rule matched (sorted); what `{changedFiles}` expanded to. */
  matched: string[];
}

/** A stage and its commands in order; no commands means no changed path concerns it (the stage is skipped). */
export interface PlannedStage {
  name: StageName;
  commands: StageCommand[];
}

/**
 * What to run for a change: every stage in {@link PROMOTION_STAGES} order, each with the commands of the rules (in plan
 * order) that match at least one changed path; a command repeated by two rules of a stage runs once. Fails closed:
 * every changed path must be matched by at least one rule of some stage.
 * @param changedPaths repository-relative paths of the change (duplicates ignored; `{changedFiles}` gets them sorted)
 * @throws EmptyChangeError when there are no changed paths
 * @throws UnsafePathError for a changed path that is not a safe relative path
 * @throws UnmappedPathError naming the first changed path (in the order given) that no rule maps
 */
export function planStages(plan: VerifyPlan, changedPaths: readonly string[]): PlannedStage[] {
  if (changedPaths.length === 0) throw new EmptyChangeError('the change has no paths');
  for (const p of changedPaths) assertSafeRelativePath(p);
  const paths = [...new Set(changedPaths)].sort();
  const mapped = new Set<string>();
  const stages = PROMOTION_STAGES.map((stage): PlannedStage => {
    const commands: StageCommand[] = [];
    plan.stages[stage].forEach((r, index) => {
      const globs = r.paths.map(compileGlob);
      const matched = paths.filter((p) => globs.some((g) => g.test(p)));
      if (matched.length === 0) return;
      matched.forEach((p) => mapped.add(p));
      const expanded = r.argv.flatMap((arg) => (arg === CHANGED_FILES_PLACEHOLDER ? matched : [arg]));
      const same = commands.find((c) => c.argv.length === expanded.length && c.argv.every((a, i) => a === expanded[i]));
      if (same) {
        same.matched = [...new Set([...same.matched, ...matched])].sort();
        return;
      }
      const command: StageCommand = { stage, rule: index, argv: expanded, matched };
      if (r.timeoutMs !== undefined) command.timeoutMs = r.timeoutMs;
      if (r.memoryMb !== undefined) command.memoryMb = r.memoryMb;
      commands.push(command);
    });
    return { name: stage, commands };
  });
  const unmapped = [...new Set(changedPaths)].filter((p) => !mapped.has(p));
  if (unmapped.length > 0) throw new UnmappedPathError(unmapped[0], unmapped);
  return stages;
}

/**
 * What "the stages" mean for a commit that has no change to verify (re-verification of a branch's head, issue 12):
 * every rule of the plan runs, with every tracked file it maps as its changed set, as if the whole tree had just
 * been added. So the compile rules compile what they cover, `{changedFiles}` test rules are given every source file
 * they match (all their related tests), and a rule whose globs match no tracked file does not run (it has nothing to
 * check). Tracked files no rule maps (README.md, the plan itself) are left out rather than failing closed: no change
 * brings them.
 * @param trackedPaths the commit's tracked files (`git ls-tree -r --name-only`)
 * @throws EmptyChangeError when no rule of the plan maps any tracked file
 */
export function planStagesForTree(plan: VerifyPlan, trackedPaths: readonly string[]): PlannedStage[] {
  const rules = PROMOTION_STAGES.flatMap((stage) => plan.stages[stage]).map((r) => r.paths.map(compileGlob));
  const mapped = trackedPaths.filter((p) => rules.some((globs) => globs.some((g) => g.test(p))));
  if (mapped.length === 0) throw new EmptyChangeError('no rule of the plan maps any tracked file');
  return planStages(plan, mapped);
}

/** The files tracked at `commit`, repository-relative. */
export async function trackedFiles(repo: string, commit: string): Promise<string[]> {
  const { stdout } = await git(['ls-tree', '-r', '-z', '--name-only', '--full-tree', commit], { cwd: repo });
  return stdout.split('\0').filter(Boolean);
}

/**
 * The built-in tool names declared by the plan the repository's checked-out commit holds, or undefined when there is
 * no such repository or plan (then Forge's configured list of reserved names applies). A plan that does not validate
 * is an error: better to refuse deployments than to let an agent take a built-in's name.
 */
export async function checkedOutBuiltinToolNames(repo: string): Promise<string[] | undefined> {
  const head = await revParse(repo, 'HEAD^{commit}').catch(() => null);
  if (!head) return undefined;
  // Two git processes, not four: the commit just resolved needs no second check before its file is read.
  const { stdout, exitCode } = await git(['cat-file', 'blob', `${head}:${VERIFY_PLAN_FILE}`], { cwd: repo, okExitCodes: [128] });
  if (exitCode !== 0) return undefined;
  return builtinToolNames(parseVerifyPlanText(stdout, `${head}:${VERIFY_PLAN_FILE}`));
}
