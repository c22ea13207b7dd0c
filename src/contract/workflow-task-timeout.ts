/**
 * The workflow task timeout every Forge run is started with. A worker that dies while it holds a workflow task (in
 * the middle of a local activity: validate, commit, apply) keeps that run from moving until the task times out;
 * Temporal's default of 10 s was most of the recovery time after a crash. 2 s is still far above what a task takes
 * here (milliseconds), and a local activity that runs longer is not cut off by it: the SDK heartbeats the task at
 * 80% of this timeout while the activity runs. Measured in RELIABILITY.md (recovery_after_worker_kill_p50_ms).
 */
export const WORKFLOW_TASK_TIMEOUT = '2 seconds';
