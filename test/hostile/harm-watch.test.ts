import { ScheduleNotFoundError, ScheduleOverlapPolicy, type ScheduleHandle } from '@temporalio/client';
import { useTemporal } from '../helpers/platform';
import { firedByTheSchedule } from './harm';

/*
 * The hostile tests' harm watch lets one kind of run through: the forge-reverify schedule's own, started on one of its
 * times (a hostile test that spans the hour sees it). Anything else a test did not start is the attack's. Judged here on
 * the real dev server, with a schedule shaped as Forge's (an interval, no offset): its own run must count as on time (it
 * did not: the interval's missing offset made the sum NaN, and a clean-clone CI failed at 08:00:00), and a manual
 * trigger, which a tool that reached the frontend could send, must not.
 */
const temporal = useTemporal();

async function firstRun(handle: ScheduleHandle) {
  for (const deadline = Date.now() + 20_000; Date.now() < deadline; await new Promise((r) => setTimeout(r, 200))) {
    const [action] = (await handle.describe()).info.recentActions;
    if (action) return temporal().client.workflow.getHandle(action.action.workflow.workflowId, action.action.workflow.firstExecutionRunId).describe();
  }
  throw new Error('the schedule started no run within 20 s');
}

/** Deletes the schedule and waits until it is gone: the next test makes another under the same ID. */
async function deleteSchedule(handle: ScheduleHandle): Promise<void> {
  await handle.delete();
  for (const deadline = Date.now() + 20_000; Date.now() < deadline; await new Promise((r) => setTimeout(r, 200))) {
    try {
      await handle.describe();
    } catch (err) {
      if (err instanceof ScheduleNotFoundError) return;
      throw err;
    }
  }
  throw new Error('the schedule was still there 20 s after its deletion');
}

async function reverifySchedule(every: number, offset?: number): Promise<ScheduleHandle> {
  return temporal().client.schedule.create({
    scheduleId: 'forge-reverify',
    spec: { intervals: [offset === undefined ? { every } : { every, offset }] },
    // No worker polls this queue: the run stays open, which is all describe() needs.
    action: { type: 'startWorkflow', workflowType: 'reverifyToolsWorkflow', workflowId: 'tool-reverify', taskQueue: 'harm-watch-nobody' },
  });
}

// The trigger's case first: on the dev server, a manual trigger of a schedule re-created under an ID deleted moments
// before started no run within 20 s, while the schedule's own runs came on time.
describe('the harm watch: the forge-reverify schedule', () => {
  test('a run triggered by hand is not, though the schedule started it', async () => {
    // The server stamps a run's scheduled time to the whole second, so a trigger in the first second of one of the
    // schedule's times reads as on time (a clean-clone CI met one at the hour). The schedule's times are put half an
    // hour away from the trigger, so the test judges the trigger and not the clock.
    const hour = 3_600_000;
    const handle = await reverifySchedule(hour, (Date.now() + hour / 2) % hour);
    try {
      await handle.trigger(ScheduleOverlapPolicy.ALLOW_ALL);
      const run = await firstRun(handle);
      expect((run.searchAttributes as Record<string, unknown[]>).TemporalScheduledById).toEqual(['forge-reverify']);
      expect(firedByTheSchedule(run, (await handle.describe()).spec.intervals?.[0])).toBe(false);
    } finally {
      await deleteSchedule(handle);
    }
  }, 60_000);

  test('its own run, on one of its times, is the platform’s', async () => {
    const handle = await reverifySchedule(2_000);
    try {
      const interval = (await handle.describe()).spec.intervals?.[0];
      expect(interval?.offset).toBeUndefined(); // as Forge's schedule describes itself: the case that was NaN
      expect(firedByTheSchedule(await firstRun(handle), interval)).toBe(true);
    } finally {
      await deleteSchedule(handle);
    }
  }, 60_000);
});
