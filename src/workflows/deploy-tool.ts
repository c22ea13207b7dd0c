import { CancellationScope, CancelledFailure, isCancellation, upsertSearchAttributes, workflowInfo } from '@temporalio/workflow';
import { deployHereSteps, sandboxSteps, toolSteps } from './activity-options';
import { rejectionOf } from './failures';
import { oneLine } from '../contract/one-line';
import { Progress } from './progress';
import { refused } from './refusal';
import { Saga } from './saga';
import { ForgeOutcomeKey } from '../contract/search-attributes';
import { DEPLOY_STAGES, type DeployToolResult, type DeployToolWorkflowInput, type VerdictSummary } from '../contract/tool-runs';
import type { CommitAndPublishResult, SandboxPlacement, TestAndCommitInput, TypecheckSummary } from '../activities/tool-activities';

/**
 * Deploys one tool: validate → compile → typecheck (FORGE_TYPECHECK) → test in the sandbox → commit (persist the
 * version and activate it, one transaction) → notify (agent-tools/ on disk; the database's NOTIFY went out with the
 * commit). Validate+compile+typecheck and commit+notify each run as one local activity (their stages are still
 * reported apart), because every step costs the run scheduling time that, for millisecond-long steps, would outweigh
 * the work. The test runs where the workflow task runs when that worker has a free sandbox slot, followed by the
 * commit in the same local activity (testAndCommitHere): two steps in all, one workflow task. It begins inside the
 * first step, beside the type check, and when it passes soon after that (FIRST_STEP_TEST_WAIT_MS), the first step
 * commits too and the run is one step (`finishedHere` in its result). Otherwise it goes to the sandbox queue and the
 * commit is a step of its own (testTool below). Only a stage that starts a step upserts ForgeStage; the last one
 * reached goes with the outcome.
 *
 * The typecheck stage is reported only when the first step's result says it ran (not with FORGE_TYPECHECK=off, nor
 * for unchanged content).
 *
 * A rejection at any step ends the run with `status: "rejected"` and the verdict (a FAILED execution whose details
 * carry that result: refusal.ts); nothing was stored, and the version active before stays active. After the commit, a failure or a cancellation restores the previous version (saga,
 * non-cancellable); a cancellation that arrives while the commit runs waits for it and then restores too, so a
 * cancelled run never leaves its version active. The workflow ID is `tool-deploy/<name>/<content hash>`, so
 * resubmitting the same content joins the same run.
 */
export async function deployToolWorkflow(input: DeployToolWorkflowInput): Promise<DeployToolResult> {
  const { workflowId } = workflowInfo();
  const progress = new Progress('deploy', input.name, DEPLOY_STAGES);
  const saga = new Saga();
  const finish = (result: Omit<DeployToolResult, 'name' | 'workflowId' | 'steps'>): DeployToolResult => {
    const outcome = result.status === 'active' ? (result.unchanged ? 'unchanged' : 'active') : 'rejected';
    const d = result.diagnostics;
    progress.end(outcome, result.status === 'rejected' ? { at: d.stage, verdict: result.verdict, message: d.message } : { message: d.message });
    upsertSearchAttributes([...progress.pendingStage(), { key: ForgeOutcomeKey, value: outcome }]);
    const steps = progress.records();
    return { name: input.name, workflowId, ...result, steps, diagnostics: { ...result.diagnostics, stages: steps } };
  };
  let stage: (typeof DEPLOY_STAGES)[number] = 'validate';

  try {
    progress.start('validate');
    const validated = await toolSteps.prepareDeployment.executeWithOptions({ summary: `validate and compile ${input.name}` }, [input]);
    if (validated.unchanged) {
      progress.done('validate', `identical to the active v${validated.activeVersion}`, validated.validateMs);
      return finish({
        status: 'active',
        version: validated.activeVersion,
        unchanged: true,
        verdict: 'passed',
        diagnostics: { stage, message: `the content is identical to the active v${validated.activeVersion}; nothing changed`, stages: [] },
      });
    }
    progress.done('validate', validated.activeVersion ? `active now: v${validated.activeVersion}` : 'new tool', validated.validateMs);
    stage = 'compile';
    progress.ran('compile', validated.compile!.durationMs, `${validated.compile!.compiledBytes} bytes of JS`);
    const typecheck = validated.typecheck;
    if (typecheck) {
      stage = 'typecheck';
      progress.ran('typecheck', typecheck.durationMs, typecheckNote(typecheck));
    }
    // With FORGE_TYPECHECK=warn, what the checker found goes into the result of a run that deploys anyway.
    const typeErrors = typecheck && typecheck.errors.length > 0 ? typecheck.errors : undefined;

    stage = 'test';
    // The first step began the test beside its type check and, the test having passed soon after, committed too.
    const finishedHere = validated.finishedHere;
    // A test here and its commit are one step (testTool below): the test shows running until both are done, and says so.
    const oneStep = validated.sandbox.here === true;
    if (!finishedHere) progress.start('test', oneStep ? 'here, then the commit in the same step' : undefined);
    // Registered before the step that may commit (testAndCommitHere, or commitAndPublish), or, when the first step
    // committed, before anything after it: if the commit lands and anything after it fails, the previous version comes
    // back (only while ours is still the active one: a newer deployment that committed since is left alone; with `ours`
    // not yet known, the store looks for this run's own activation). A first step that committed has returned: after
    // its commit nothing in it throws (a failed commit comes back as `commitError`), and a cancellation requested
    // meanwhile waits for it (WAIT_CANCELLATION_COMPLETED), so the check below still undoes it.
    const pointer: { previous?: number; ours?: number } = { previous: validated.activeVersion };
    const restore = () =>
      saga.add('restore the previously active version', () =>
        toolSteps.restoreActive.executeWithOptions({ summary: `restore ${input.name} v${pointer.previous ?? '(none)'}` }, [
          { name: input.name, version: pointer.previous, onlyIfActive: pointer.ours, workflowId },
        ]),
      );
    const commitInput = {
      name: input.name,
      source: input.source,
      testInput: input.testInput,
      description: input.description,
      contentHash: input.contentHash,
      workflowId,
    };
    if (oneStep) restore();
    const tested = finishedHere ? { ...finishedHere, queued: false } : await testTool(input, validated.sandbox, commitInput);
    const { verdict } = tested;
    const tookTest = `passed in ${verdict.durationMs} ms${tested.queued ? ' (on the sandbox queue)' : finishedHere ? ' (in the first step)' : ''}`;
    if (finishedHere) progress.ran('test', verdict.durationMs, tookTest);
    else progress.done('test', tookTest);

    stage = 'commit';
    let committed = tested.committed;
    if (!committed) {
      progress.start('commit', tested.commitError ? `again, as its own step, after: ${oneLine(tested.commitError, 200)}` : undefined);
      if (!oneStep) restore();
      committed = await toolSteps.commitAndPublish.executeWithOptions({ summary: `persist and activate ${input.name}, publish agent-tools/` }, [
        { ...commitInput, verdict },
      ]);
    }
    pointer.ours = committed.version;
    // What the commit replaced; on a retried commit the store reports our own version, and validate's view stands.
    if (committed.previousVersion !== committed.version) pointer.previous = committed.previousVersion;
    // Cancelled while the commit ran (the run waited for it to end): the cancellation still wins, so the run ends as
    // every cancelled deployment does, with the previous version active again and the caller told "cancelled".
    if (CancellationScope.current().consideredCancelled) {
      throw new CancelledFailure(`the deployment was cancelled while v${committed.version} was being committed; it is undone`);
    }
    if (tested.committed) progress.ran('commit', committed.commitMs, `v${committed.version} active`);
    else progress.done('commit', `v${committed.version} active`, committed.commitMs);
    stage = 'notify';
    progress.ran('notify', committed.publishMs, `agent-tools/ at generation ${committed.generation}`);

    return finish({
      status: 'active',
      version: committed.version,
      previousVersion: pointer.previous,
      verdict: 'passed',
      diagnostics: {
        stage,
        message: `v${committed.version} of ${input.name} is active${typecheck?.mode === 'warn' ? warnedAbout(typecheck) : ''}`,
        sandbox: verdict,
        ...(typeErrors ? { typeErrors } : {}),
        stages: [],
      },
    });
  } catch (err) {
    const rejection = rejectionOf(err);
    // A compile error is found inside the validate step: validate passed, compile failed (not "✗ validate").
    const failedAt = rejection && (DEPLOY_STAGES as readonly string[]).includes(rejection.stage) ? (rejection.stage as typeof stage) : stage;
    if (failedAt !== stage) progress.done(stage);
    // Type errors are found inside the first step too, after its compile passed.
    if (failedAt === 'typecheck' && stage === 'validate') progress.done('compile');
    // The Web UI's stage lines say why too, not only the run's failure message.
    progress.failed(failedAt, rejection ? `${rejection.verdict}: ${oneLine(rejection.message, 200)}` : undefined);
    if (rejection) {
      const result = finish({
        status: 'rejected',
        verdict: rejection.verdict,
        diagnostics: {
          stage: rejection.stage,
          message: rejection.message,
          sandbox: rejection.sandbox,
          compileErrors: rejection.compileErrors,
          ...(rejection.typeErrors ? { typeErrors: rejection.typeErrors } : {}),
          stages: [],
        },
      });
      return refused(result, `${input.name} rejected at ${rejection.stage} (${rejection.verdict}): ${rejection.message}`);
    }
    await saga.compensate();
    if (!isCancellation(err)) upsertSearchAttributes([...progress.pendingStage(), { key: ForgeOutcomeKey, value: 'failed' }]);
    throw err;
  }
}

/**
 * The test stage, in one of two places, a choice made at run time and recorded in the history (a replay follows it):
 * - here, where the workflow task runs, when this platform tests here (`placement.here`, FORGE_SANDBOX_TEST_HERE,
 *   recorded by the first step) and that worker has a free sandbox slot: the test and, when it passed, the commit are
 *   one local activity (testAndCommitHere), no server round trip. `committed` comes back with the verdict;
 *   `commitError`: the test passed but the commit failed there, and the caller commits as its own step.
 * - on the sandbox queue otherwise (no slot free here: testAndCommitHere answers `busy` at once; or FORGE_SANDBOX_TEST_HERE
 *   off), where any worker with a free slot takes it (`queued`); the caller commits as its own step.
 */
async function testTool(
  input: DeployToolWorkflowInput,
  placement: SandboxPlacement,
  commitInput: TestAndCommitInput,
): Promise<{ verdict: VerdictSummary; queued: boolean; committed?: CommitAndPublishResult; commitError?: string }> {
  if (placement.here) {
    const here = await deployHereSteps(placement.maxTimeoutMs).testAndCommitHere.executeWithOptions(
      { summary: `sandbox test of ${input.name}, then persist and activate it, publish agent-tools/` },
      [commitInput],
    );
    if (here.verdict) return { verdict: here.verdict, queued: false, committed: here.committed, commitError: here.commitError };
  }
  const verdict = await sandboxSteps(placement.taskQueue, placement.maxTimeoutMs).testTool.executeWithOptions({ summary: `sandbox test of ${input.name}` }, [
    { name: input.name, source: input.source, testInput: input.testInput },
  ]);
  return { verdict, queued: true };
}

/** The typecheck stage's line in the progress view. */
function typecheckNote(t: TypecheckSummary): string {
  if (t.unchecked) return `not checked (${t.unchecked})`;
  if (t.beforeCommit) return "no type errors (checked before this run's commit, not again)";
  const count = t.errors.length + t.truncated;
  return count === 0 ? 'no type errors' : `${count} type error${count === 1 ? '' : 's'} (FORGE_TYPECHECK=warn), first: ${oneLine(t.errors[0].message, 200)}`;
}

/** What a run deployed despite, with FORGE_TYPECHECK=warn: appended to its one-sentence message. */
function warnedAbout(t: TypecheckSummary): string {
  if (t.unchecked) return ` without a type check (${t.unchecked})`;
  const count = t.errors.length + t.truncated;
  if (count === 0) return '';
  return `, with ${count} type error${count === 1 ? '' : 's'} reported (FORGE_TYPECHECK=warn; see diagnostics.typeErrors): ${t.errors[0].message}`;
}
