import { createHash } from 'node:crypto';
import { mkdir, readdir, readFile, rm, unlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { ActivityNotFoundError, type Client } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import type { ActivityInterceptorsFactory } from '@temporalio/worker';
import { PRIVATE_DIR_MODE, PRIVATE_FILE_MODE } from '../contract/private-modes';
import { liveProcess } from '../process/live-process';

/*
 * When a worker dies (SIGKILL, the OOM killer, a crash), Temporal learns that the activity attempts it was running are
 * lost only when their heartbeat timeouts run out (3 s for a sandbox test or a git step, 5 s for a stage), and the next
 * workflow task of each such run waits out the dead worker's sticky queue timeout on top. A worker restarted on the
 * same host need not wait: each worker process keeps, in a directory of its own under FORGE_HOME, one small file per
 * activity attempt it is running (the attempt's task token and its run); the next worker to start on the host finds
 * the directories of processes that are gone, fails each attempt at once (a retryable failure: Temporal schedules the
 * next attempt no sooner than ~1 s later, whatever the step's retry interval or a failure's nextRetryDelay, measured on
 * the dev server 2026-11-30) and moves each run's next workflow task off the dead worker's sticky queue. An attempt
 * that had already ended, or was already retried elsewhere, is refused by the server by its token and left alone.
 * The heartbeat timeout stays the bound for a host that does not come back.
 */

/** The failure type of an attempt handed back because its worker died. */
const WORKER_DIED = 'ForgeWorkerDied';

/** Where the workers of FORGE_HOME `home` keep their attempts (host-local state, like the embedded database). */
export const attemptsDirOf = (home: string) => path.join(home, 'attempts');

/** One attempt in flight, as its file holds it. */
interface AttemptRecord {
  taskToken: string;
  workflowId: string;
  runId: string;
  activityType: string;
  attempt: number;
}

/**
 * A process's identity that a reused pid cannot fake: its pid and its start time (liveProcess), or undefined when it
 * is gone or a zombie. Without /proc (macOS), any live process with the pid counts as the same one: a reused pid only
 * delays the handing back to the heartbeat timeout, as without this ledger.
 */
function processIdentity(pid: number): string | undefined {
  const live = liveProcess(pid);
  return live && `${pid}.${live.startTime ?? 0}`;
}

/**
 * The activity interceptor that keeps this process's attempts on file under `dir`: written before the attempt starts,
 * removed after it ends (not waited for: a file left by a process killed in between is refused by the server by its
 * token). Local activities are not recorded: they run inside a workflow task, which the server hands back by its own
 * (2 s) timeout.
 */
export function attemptLedger(dir: string): ActivityInterceptorsFactory {
  const own = path.join(dir, processIdentity(process.pid) ?? `${process.pid}.0`);
  let made: Promise<unknown> | undefined;
  return (ctx) => ({
    inbound: {
      async execute(input, next) {
        const { info } = ctx;
        const run = info.workflowExecution;
        if (info.isLocal || !run) return next(input);
        const file = path.join(own, `${createHash('sha256').update(info.taskToken).digest('hex').slice(0, 32)}.json`);
        const record: AttemptRecord = {
          taskToken: Buffer.from(info.taskToken).toString('base64'),
          workflowId: run.workflowId,
          runId: run.runId,
          activityType: info.activityType,
          attempt: info.attempt,
        };
        // Private: a task token lets whoever holds it complete or fail the attempt.
        made ??= mkdir(own, { recursive: true, mode: PRIVATE_DIR_MODE });
        // Awaited (a fraction of a millisecond on FORGE_HOME): an attempt killed at its very start is on file too.
        const written = await made
          .then(() => writeFile(file, JSON.stringify(record), { mode: PRIVATE_FILE_MODE }))
          .then(
            () => true,
            () => false,
          );
        try {
          return await next(input);
        } finally {
          if (written) void unlink(file).catch(() => undefined);
        }
      },
    },
  });
}

/** Removes this process's own directory (at a clean stop, once its attempts have ended). */
export async function removeOwnAttempts(dir: string): Promise<void> {
  const identity = processIdentity(process.pid);
  if (identity) await rm(path.join(dir, identity), { recursive: true, force: true });
}

/**
 * Hands back every attempt of the workers that used `dir` and are gone; returns what it handed back, for the log.
 * Never throws: what it cannot hand back, the heartbeat timeout still does.
 */
export async function handBackDeadWorkersAttempts(dir: string, client: Client): Promise<{ workers: number; attempts: string[]; errors: string[] }> {
  const handed: string[] = [];
  const errors: string[] = [];
  let workers = 0;
  const entries = await readdir(dir).catch(() => [] as string[]);
  for (const entry of entries) {
    const match = /^(\d+)\.(\d+)$/.exec(entry);
    if (!match || processIdentity(Number(match[1])) === entry) continue;
    workers++;
    const holder = path.join(dir, entry);
    for (const name of await readdir(holder).catch(() => [] as string[])) {
      const record = await readFile(path.join(holder, name), 'utf8')
        .then((text) => JSON.parse(text) as AttemptRecord)
        .catch(() => undefined);
      if (!record) continue;
      const execution = { workflowId: record.workflowId, runId: record.runId };
      // The run's next workflow task would otherwise wait on the dead worker's sticky queue until it times out.
      await client.workflowService.resetStickyTaskQueue({ namespace: client.options.namespace, execution }).catch(() => undefined);
      const failure = ApplicationFailure.retryable(
        `the worker running this attempt (pid ${match[1]}) died; a worker restarted on its host handed the attempt back to be retried`,
        WORKER_DIED,
      );
      const done = await client.activity.fail(Buffer.from(record.taskToken, 'base64'), failure).then(
        () => true,
        (err: unknown) => {
          if (!(err instanceof ActivityNotFoundError)) errors.push(`${record.activityType} of ${record.workflowId}: ${(err as Error).message}`);
          return false;
        },
      );
      if (done) handed.push(`${record.activityType} (attempt ${record.attempt}) of ${record.workflowId}`);
    }
    await rm(holder, { recursive: true, force: true });
  }
  return { workers, attempts: handed, errors };
}
