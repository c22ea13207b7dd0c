import { coalesce } from '../../src/registry/coalesce';

const tick = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('coalesce (the worker republishes agent-tools/ this way after NOTIFYs)', () => {
  test('many triggers before the delay run the task once; a trigger during a run runs it once more, never twice at once', async () => {
    let runs = 0;
    let concurrent = 0;
    let maxConcurrent = 0;
    const trigger = coalesce(async () => {
      runs++;
      concurrent++;
      maxConcurrent = Math.max(maxConcurrent, concurrent);
      await tick(40);
      concurrent--;
    }, 20);
    for (let i = 0; i < 10; i++) trigger.trigger();
    await tick(35); // the first run is going
    expect(runs).toBe(1);
    trigger.trigger();
    trigger.trigger();
    await tick(150);
    expect(runs).toBe(2);
    expect(maxConcurrent).toBe(1);
  });

  test('a failing task does not stop later triggers; flush() cancels a pending run and waits for a running one', async () => {
    let runs = 0;
    const trigger = coalesce(async () => {
      runs++;
      await tick(30);
      throw new Error('the database is down');
    }, 10);
    trigger.trigger();
    await tick(20);
    await trigger.flush(); // waits for the running, failing one
    expect(runs).toBe(1);
    trigger.trigger();
    await trigger.flush(); // cancels the pending one
    await tick(40);
    expect(runs).toBe(1);
    trigger.trigger();
    await tick(60);
    expect(runs).toBe(2);
  });
});
