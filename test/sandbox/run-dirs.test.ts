import { mkdirSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runDirPrefix, sweepOrphanedRunDirs } from '../../src/sandbox/run-dirs';

test("a worker's leftover run directories are removed by the next process; live, foreign and old-style ones stay", async () => {
  const root = mkdtempSync(join(tmpdir(), 'forge-run-dirs-'));
  try {
    const namespace = /\[(\d+)\]/.exec(readlinkSync('/proc/self/ns/pid'))![1];
    const noSuchPid = Number(readFileSync('/proc/sys/kernel/pid_max', 'utf8')) + 1;
    const ours = `${runDirPrefix()}live`; // this process made it and still runs
    const dead = `forge-sbx-${namespace}-${noSuchPid}-12345-spare1`;
    const reused = `forge-sbx-${namespace}-${process.pid}-1-spare2`; // our pid, another start time: a dead maker
    const foreign = `forge-sbx-1-${noSuchPid}-12345-other`; // another PID namespace: not ours to judge
    const oldStyle = 'forge-sbx-Ab12Cd';
    for (const name of [ours, dead, reused, foreign, oldStyle]) mkdirSync(join(root, name));
    mkdirSync(join(root, dead, 'nested', 'deeper'), { recursive: true });
    writeFileSync(join(root, dead, 'nested', 'deeper', 'tool.cjs'), 'x');

    const removed = await sweepOrphanedRunDirs(root);
    expect(removed.sort()).toEqual([dead, reused].sort());
    expect(readdirSync(root).sort()).toEqual([ours, foreign, oldStyle].sort());
    expect(await sweepOrphanedRunDirs(root)).toBe(removed); // once per process and root
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});
