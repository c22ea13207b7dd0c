/**
 * Turns a task into a trigger that may be pulled any number of times: the task runs `delayMs` after the first pull
 * (at once for 0), once for every pull made before it started, and once more if pulled while it ran. It never runs
 * twice at once. `flush()` cancels a pending delay and waits for what is running (for shutdown).
 */
export function coalesce(task: () => Promise<void>, delayMs: number): { trigger(): void; flush(): Promise<void> } {
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> | undefined;
  let again = false;
  const start = () => {
    timer = undefined;
    running = task()
      .catch(() => undefined) // the task reports its own failures; a trigger has no caller to tell
      .finally(() => {
        running = undefined;
        if (again) {
          again = false;
          schedule();
        }
      });
  };
  const schedule = () => {
    if (timer) return;
    if (running) {
      again = true;
      return;
    }
    if (delayMs === 0) start();
    else timer = setTimeout(start, delayMs);
  };
  return {
    trigger: schedule,
    async flush() {
      if (timer) clearTimeout(timer);
      timer = undefined;
      again = false;
      await running;
    },
  };
}
