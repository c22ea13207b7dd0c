import { formatRuns } from '../../src/commands/runs';
import type { RunRow } from '../../src/run-outcome';

/** `forge runs` as an operator reads it: every line fits 80 columns, every run has an outcome. */
const start = new Date(2026, 10, 24, 3, 7, 0);
const at = (ms: number) => new Date(start.getTime() + ms).toISOString();
const row = (extra: Partial<RunRow> & Pick<RunRow, 'workflowId' | 'status' | 'outcome'>): RunRow => ({
  runId: 'r',
  type: 'deployToolWorkflow',
  kind: 'deploy',
  startTime: at(0),
  ...extra,
});

test('columns fit 80; a long ID keeps its head and its hash; a running run shows its stage', () => {
  const runs: RunRow[] = [
    row({ workflowId: 'tool-deploy/celsius_to_fahrenheit/4f08e235c77a4da3', status: 'COMPLETED', outcome: 'active', closeTime: at(812) }),
    row({ workflowId: 'tool-deploy/throws/7a7b6c7c57ede9c7', status: 'FAILED', outcome: 'rejected', stage: 'test', closeTime: at(65_400) }),
    row({ workflowId: 'tool-deploy/slow/0123456789abcdef', status: 'RUNNING', outcome: 'running', stage: 'test' }),
    row({ workflowId: 'builtin-promote/main/abcdef0123456789', kind: 'promote', status: 'RUNNING', outcome: 'running', stage: 'workspace' }),
    row({ workflowId: 'schema-migrate/add_users', kind: 'migrate', status: 'TERMINATED', outcome: 'terminated', closeTime: at(7_200_000) }),
  ];
  const text = formatRuns(runs, new Date(start.getTime() + 3_000), 80);
  const lines = text.split('\n');
  expect(lines).toHaveLength(6);
  for (const line of lines) expect(line.length).toBeLessThanOrEqual(80);
  expect(lines[0]).toMatch(/^STARTED\s+OUTCOME\s+TOOK\s+WORKFLOW ID$/);
  expect(lines[1]).toMatch(/^11-24 03:07\s+active\s+0\.8s\s+tool-deploy\/\S*…\S*a4da3$/);
  expect(lines[2]).toMatch(/\s+rejected\s+1m05s\s+tool-deploy\/throws\/7a7b6c7c57ede9c7$/);
  expect(lines[3]).toMatch(/\s+running: test\s+3\.0s\s+/);
  expect(lines[4]).toMatch(/\s+running: workspace\s+\S+\s+builtin-promote\/main\/abcdef0123456789$/);
  expect(lines[5]).toMatch(/\s+terminated\s+2h00m\s+schema-migrate\/add_users$/);
  // A wider terminal shows whole IDs.
  expect(formatRuns(runs, new Date(), 120)).toContain('tool-deploy/celsius_to_fahrenheit/4f08e235c77a4da3');
});
