import { spawnSync } from 'node:child_process';
import { mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { sweepDeadWritersTempFiles } from '../../src/registry/atomic-file';
import { scratchDir } from './helpers';

// Found by test/chaos/load-with-faults (seed 926670267): a worker SIGKILLed between writing a version file's temp
// file and renaming it left `.v3.json.<pid>.<hex>.tmp` in agent-tools/ for good.
test("the temp files of writers that ended are swept; a live writer's and other files are left", async () => {
  const dir = scratchDir('forge-atomic-sweep-');
  try {
    const dead = spawnSync('true').pid!; // ended and reaped by the time spawnSync returns
    mkdirSync(path.join(dir, 'tool_a'));
    writeFileSync(path.join(dir, 'tool_a', `.v3.json.${dead}.0123456789ab.tmp`), 'half');
    writeFileSync(path.join(dir, `.active.json.${dead}.0123456789ab.tmp`), 'half');
    writeFileSync(path.join(dir, 'tool_a', `.v4.json.${process.pid}.0123456789ab.tmp`), 'in flight');
    writeFileSync(path.join(dir, 'tool_a', 'v3.json'), '{}');
    const removed = await sweepDeadWritersTempFiles(dir);
    expect(removed.sort()).toEqual([`.active.json.${dead}.0123456789ab.tmp`, path.join('tool_a', `.v3.json.${dead}.0123456789ab.tmp`)].sort());
    expect(readdirSync(path.join(dir, 'tool_a')).sort()).toEqual([`.v4.json.${process.pid}.0123456789ab.tmp`, 'v3.json'].sort());
    expect(await sweepDeadWritersTempFiles(path.join(dir, 'no-such-dir'))).toEqual([]);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
