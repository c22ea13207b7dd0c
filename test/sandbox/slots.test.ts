import { SandboxSlots } from '../../src/sandbox/slots';

describe('SandboxSlots', () => {
  test('tryTake hands out at most `size` slots and never waits', () => {
    const slots = new SandboxSlots(2);
    const a = slots.tryTake();
    const b = slots.tryTake();
    expect(a && b).toBeTruthy();
    expect(slots.tryTake()).toBeUndefined();
    a!();
    expect(slots.busy).toBe(1);
    expect(slots.tryTake()).toBeDefined();
  });

  test('take waits first come, first served; tryTake does not jump the queue', async () => {
    const slots = new SandboxSlots(1);
    const first = slots.tryTake()!;
    const order: string[] = [];
    const second = slots.take().then((release) => (order.push('second'), release));
    const third = slots.take().then((release) => (order.push('third'), release));
    first();
    // The slot went to the waiting `second`, not to a caller that asks now.
    expect(slots.tryTake()).toBeUndefined();
    (await second)();
    (await third)();
    expect(order).toEqual(['second', 'third']);
    expect(slots.busy).toBe(0);
  });

  test('a release called twice frees one slot only', () => {
    const slots = new SandboxSlots(2);
    const a = slots.tryTake()!;
    slots.tryTake();
    a();
    a();
    expect(slots.busy).toBe(1);
  });

  test('an aborted wait rejects with the reason and leaves the queue', async () => {
    const slots = new SandboxSlots(1);
    const held = slots.tryTake()!;
    const controller = new AbortController();
    const waiting = slots.take(controller.signal);
    controller.abort(new Error('cancelled'));
    await expect(waiting).rejects.toThrow('cancelled');
    held();
    expect(slots.busy).toBe(0);
    expect(slots.tryTake()).toBeDefined();
    await expect(slots.take(AbortSignal.abort(new Error('already')))).rejects.toThrow('already');
  });

  test('a size that is not a positive integer is refused', () => {
    expect(() => new SandboxSlots(0)).toThrow(/positive integer/);
  });
});
