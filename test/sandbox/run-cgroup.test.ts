import { existsSync, mkdirSync, readFileSync, readlinkSync } from 'node:fs';
import { join } from 'node:path';
import { createRunCgroup, runCgroupSupport } from '../../src/sandbox/run-cgroup';
import { testIf } from '../helpers/skip';

const { base, reason } = runCgroupSupport();

// Without a memory cgroup to make (not root, no delegation) there is nothing to create or sweep; the reason is printed.
testIf(base, reason ?? 'no memory cgroup to make')("a run's cgroup is limited, removable, and a killed worker's leftovers are swept", async () => {
  const namespace = /\[(\d+)\]/.exec(readlinkSync('/proc/self/ns/pid'))![1];
  const noSuchPid = Number(readFileSync('/proc/sys/kernel/pid_max', 'utf8')) + 1;
  const leftover = join(base!.dir, `forge-run-${namespace}-${noSuchPid}-1-cafe01`);
  mkdirSync(base!.nested ? join(leftover, 'tree') : leftover, { recursive: true }); // as a killed worker leaves one

  const cgroup = createRunCgroup(256 * 1024 * 1024)!;
  expect(existsSync(leftover)).toBe(false); // swept on this process's first run cgroup
  const limitFile = base!.version === 1 ? 'memory.limit_in_bytes' : 'memory.max';
  expect(readFileSync(join(cgroup.limitPath, limitFile), 'utf8').trim()).toBe(String(256 * 1024 * 1024));
  // Where a child's memory counts against its parent, the processes go one level below the limit (run-cgroup.ts).
  expect(cgroup.path).toBe(base!.nested ? join(cgroup.limitPath, 'tree') : cgroup.limitPath);
  expect(existsSync(cgroup.path)).toBe(true);
  expect(cgroup.oomKills()).toBe(0);
  await cgroup.remove();
  expect(existsSync(cgroup.path)).toBe(false);
  expect(existsSync(cgroup.limitPath)).toBe(false);
});
