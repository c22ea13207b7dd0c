import { CancellationScope } from '@temporalio/workflow';

/**
 * Runs a workflow whose one state-changing step commits its whole change in one transaction (rollback, delete, schema
 * migration) without letting a cancellation split what the run did from what it reports.
 *
 * Such a step is a local activity. When a cancel request reaches the server while the step runs, the workflow task
 * that would record the step's result is refused (UnhandledCommand), the result is lost, and the run is replayed with
 * the cancellation already in force, before the step: a cancellable run would end "cancelled" with the change
 * committed. Run to the end, the replay performs the step again, which is idempotent by its run and reports the
 * earlier attempt's commit; an earlier attempt still in flight is serialised with it by the subject's lock (the tool's
 * row, the migration name's advisory lock). A cancel request is recorded and the run ends as it would have: the step
 * takes milliseconds (a migration waits at most its lock_timeout for a lock), so there is little to cancel.
 */
export function runToTheEnd<T>(body: () => Promise<T>): Promise<T> {
  return CancellationScope.nonCancellable(body);
}
