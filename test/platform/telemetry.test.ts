import { ActivityFailure, ApplicationFailure, RetryState } from '@temporalio/common';
import { FailureType } from '../../src/contract/failures';
import { OUTCOME_LOG_ATTRIBUTE } from '../../src/contract/observability';
import { terminalLogFunction } from '../../src/platform/telemetry';

/** The `forge up` terminal logger alone: which of the SDK's log entries an operator sees, and how. */
function logged(entries: { level: 'TRACE' | 'DEBUG' | 'INFO' | 'WARN' | 'ERROR'; message: string; meta?: Record<string, unknown> }[]): string {
  let out = '';
  const log = terminalLogFunction((text) => (out += text));
  for (const e of entries) log({ ...e, timestampNanos: 1_700_000_000_000_000_000n });
  return out;
}

const verdict = ApplicationFailure.create({ type: FailureType.toolRejected, message: 'the test run ended failed', nonRetryable: true });
const wrapped = new ActivityFailure('Activity task failed', 'testTool', '1', RetryState.NON_RETRYABLE_FAILURE, undefined, verdict);

test('a run outcome is one line whatever its level and length; the SDK INFO chatter is dropped', () => {
  const out = logged([
    { level: 'INFO', message: 'Worker state changed', meta: { state: 'RUNNING' } },
    { level: 'INFO', message: 'tool-deploy/adder/abc rejected at compile (compile_error): line 1\n  line 2', meta: { [OUTCOME_LOG_ATTRIBUTE]: 'rejected' } },
    { level: 'INFO', message: `tool-deploy/big/abc rejected: ${'x'.repeat(2000)}`, meta: { [OUTCOME_LOG_ATTRIBUTE]: 'rejected' } },
  ]);
  const lines = out.trimEnd().split('\n');
  expect(lines).toHaveLength(2);
  expect(lines[0]).toBe('forge: tool-deploy/adder/abc rejected at compile (compile_error): line 1 | line 2');
  expect(lines[1].length).toBeLessThanOrEqual(410);
});

test("a verdict's Activity failed / Workflow failed warning is dropped; a real fault keeps its stack", () => {
  expect(logged([{ level: 'WARN', message: 'Activity failed', meta: { error: verdict } }])).toBe('');
  expect(logged([{ level: 'WARN', message: 'Workflow failed', meta: { error: wrapped } }])).toBe('');
  const fault = new Error('connect ECONNREFUSED 127.0.0.1:5432');
  const out = logged([{ level: 'WARN', message: 'Activity failed', meta: { error: fault } }]);
  expect(out).toContain('[WARN] Activity failed');
  expect(out).toContain('ECONNREFUSED');
  expect(out).toMatch(/\n\s+at /);
});

test('a refused run fails after its outcome line: that failure is not printed again; another run’s failure is', () => {
  // What arrives from the workflow thread is a structured clone: the refusal's type is gone, only name, message, stack.
  const cloned = structuredClone(ApplicationFailure.create({ type: FailureType.runRefused, message: 'adder rejected at test', nonRetryable: true }));
  const out = logged([
    { level: 'INFO', message: 'tool-deploy/adder/abc rejected at test (failed): boom', meta: { [OUTCOME_LOG_ATTRIBUTE]: 'rejected', runId: 'run-1' } },
    { level: 'WARN', message: 'Workflow failed', meta: { runId: 'run-1', error: cloned } },
    { level: 'WARN', message: 'Workflow failed', meta: { runId: 'run-2', error: new Error('a real fault') } },
  ]);
  const lines = out.trimEnd().split('\n');
  expect(lines[0]).toBe('forge: tool-deploy/adder/abc rejected at test (failed): boom');
  expect(out.match(/\[WARN\] Workflow failed/g)).toHaveLength(1);
  expect(out).toContain('a real fault');
});
