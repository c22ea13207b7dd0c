import { Context } from '@temporalio/activity';
import type { SandboxActivities } from './sandbox-activities';
import type { TestAndCommitHereResult, TestAndCommitInput, ToolActivities, ToolInnerSteps } from './tool-activities';
import type { StepCheckpoint } from '../contract/fault-points';
import { atCheckpoint } from '../contract/fault-points';

/** The steps testAndCommitHere runs inside itself (fault points of their own; commitAndPublish's steps fire inside it). */
export const DEPLOY_HERE_INNER_STEPS = ['testToolHere', 'commitAndPublish'] as const;
export type DeployHereInnerStep = (typeof DEPLOY_HERE_INNER_STEPS)[number];

/**
 * How long a deployment's first step waits, after its type check, for the test it began beside it (startTestEarly).
 * A test that passes within it is committed in that step too: the deployment is then one local activity, without the
 * hand-over to a second one (~5-10 ms, a marker and the `test` stage's upsert). A longer test goes on running and the
 * second step takes it, so the wait never runs a test twice. Its cost: the run's progress shows `validate` up to this
 * much longer, which no one outside the run can see before the workflow task's next heartbeat (1.6 s) anyway.
 */
const FIRST_STEP_TEST_WAIT_MS = 250;

/**
 * A deployment's last two steps as one local activity, where the workflow task runs. Each local activity costs the
 * run a hand-over through the SDK (~5 ms on an idle machine, ~8–10 ms under load, measured 2026-11-27), a marker and
 * its search-attribute upserts; a test that passed is followed by its commit at once.
 *
 * `checkpoint` (a worker armed with fault points passes one) is called around its two steps, so their points fire here;
 * commitAndPublish calls its own around commitVersion and publishTools.
 */
export function createDeployHereActivities(groups: {
  sandbox: Pick<SandboxActivities, 'testToolHere'>;
  tools: Pick<ToolActivities, 'commitAndPublish'>;
  /** Finds the verdict this run already committed the content with (the tool inner steps'); absent in some tests. */
  ownCommit?: Pick<ToolInnerSteps, 'verdictOfOwnCommit'>;
  checkpoint?: StepCheckpoint<DeployHereInnerStep>;
}) {
  const step = <T>(name: DeployHereInnerStep, run: () => Promise<T>) => atCheckpoint(groups.checkpoint, name, run);
  return {
    /**
     * testToolHere, then, when the test passed, commitAndPublish. A rejected test is the same non-retryable
     * `ToolRejected` failure as testToolHere's, and nothing is committed. A failed commit is not this step's failure:
     * this step's retries are the sandbox test's (a few), while a commit waits out a database that is down (retried
     * without limit), so the verdict is returned with `commitError` and the workflow runs commitAndPublish next,
     * which finds whatever this attempt stored (idempotent by the run). Idempotent as its two halves are.
     */
    async testAndCommitHere(input: TestAndCommitInput): Promise<TestAndCommitHereResult> {
      // Run again after this run's commit (the worker died before Temporal recorded this step): the commit's verdict
      // stands, and only the commit (finding itself done) and the publish run again.
      const committedWith = await groups.ownCommit?.verdictOfOwnCommit(input);
      const tested = committedWith
        ? { verdict: committedWith }
        : await step('testToolHere', () => groups.sandbox.testToolHere({ name: input.name, source: input.source, testInput: input.testInput }));
      if (!tested.verdict) return tested;
      try {
        const verdict = tested.verdict;
        return { verdict, committed: await step('commitAndPublish', () => groups.tools.commitAndPublish({ ...input, verdict })) };
      } catch (err) {
        const message = (err as Error).message;
        Context.current().log.warn(`the commit after ${input.name}'s test failed; the workflow retries it as its own step: ${message}`);
        return { verdict: tested.verdict, commitError: message };
      }
    },
  };
}

export type DeployHereActivities = ReturnType<typeof createDeployHereActivities>;

/**
 * What a deployment's first step (prepareDeployment, ToolActivityDeps.finishHere) calls once its type check passed:
 * when the test that step began passes within FIRST_STEP_TEST_WAIT_MS, testAndCommitHere, in that step; otherwise
 * undefined, and the test goes on for the next step to take. Not an activity of its own: the fault points it reaches
 * are testAndCommitHere's inner steps'.
 */
export function firstStepFinisher(
  sandbox: Pick<SandboxActivities, 'earlyTestPassedWithin'>,
  here: Pick<DeployHereActivities, 'testAndCommitHere'>,
): (input: TestAndCommitInput) => Promise<TestAndCommitHereResult | undefined> {
  return async (input) => ((await sandbox.earlyTestPassedWithin(FIRST_STEP_TEST_WAIT_MS)) ? here.testAndCommitHere(input) : undefined);
}
