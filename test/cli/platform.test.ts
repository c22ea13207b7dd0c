import { copyFileSync, existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { startTemporal, startTestPlatform, type TestPlatform } from '../helpers/platform';
import { cliEnv, runForge, runForgeJson, TOOL_FIXTURES } from './run-cli';
import { adderTool } from '../helpers/tools';

/**
 * The commands that go through Temporal, run as a user would: the real binary against a real dev server and real
 * workers (PGlite), pointed there only by `platform.childEnv`.
 */

let env: TestWorkflowEnvironment;
let platform: TestPlatform;
let dir: string;
let childEnv: NodeJS.ProcessEnv;
const file = (name: string, text: string) => {
  const p = path.join(dir, name);
  writeFileSync(p, text);
  return p;
};

beforeAll(async () => {
  env = await startTemporal();
  platform = await startTestPlatform(env, 'pglite');
  childEnv = cliEnv(platform.childEnv);
  dir = mkdtempSync(path.join(existsSync('/dev/shm') ? '/dev/shm' : tmpdir(), 'forge-cli-platform-'));
}, 120_000);

afterAll(async () => {
  await platform?.teardown();
  await env?.teardown();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('tools through the CLI', () => {
  test('deploy --json: exit 0, {status: "active", name, version, workflowId, verdict, diagnostics}; progress on stderr', async () => {
    const { code, json, stderr } = await runForgeJson(
      ['deploy', file('adder.ts', adderTool('one')), '--test-input', '{"a":1,"b":2}', '--description', 'adds'],
      {
        env: childEnv,
      },
    );
    expect(code).toBe(0);
    expect(json).toMatchObject({ status: 'active', name: 'adder', version: 1, verdict: 'passed' });
    expect(json.workflowId).toEqual(expect.stringMatching(/^tool-deploy\/adder\//));
    expect(json.diagnostics).toEqual(expect.any(Object));
    expect(stderr).toContain(`deploying adder — run ${String(json.workflowId)}`);
    expect(stderr).toMatch(/✓ test/);
    expect(stderr).toMatch(/✓ commit/);
  });

  test('a rejected deploy: exit 1, {status: "rejected", verdict, diagnostics}, no version', async () => {
    const { code, json } = await runForgeJson(['deploy', path.join(TOOL_FIXTURES, 'throws.ts')], { env: childEnv });
    expect(code).toBe(1);
    expect(json).toMatchObject({ status: 'rejected', name: 'throws', verdict: 'failed', workflowId: expect.any(String) });
    expect(json.diagnostics).toMatchObject({ message: expect.stringContaining('boom from execute') });
    expect(json.version).toBeUndefined();
  });

  test('a rejected deploy without --json: the reason as text, exit 1', async () => {
    const copy = path.join(dir, 'exit_one.ts');
    copyFileSync(path.join(TOOL_FIXTURES, 'exit_one.ts'), copy);
    const r = await runForge(['deploy', copy], { env: childEnv });
    expect(r.code).toBe(1);
    expect(r.stdout).toMatch(/^exit_one was rejected at /);
    expect(r.stderr).toContain('deploying exit_one');
  });

  test('deploy with bad input: --test-input not JSON, a missing file → exit 2 before anything starts', async () => {
    const bad = await runForgeJson(['deploy', path.join(dir, 'adder.ts'), '--test-input', '{a:'], { env: childEnv });
    expect(bad.code).toBe(2);
    expect(bad.json.error).toEqual(expect.stringContaining('--test-input is not JSON'));
    const missing = await runForgeJson(['deploy', path.join(dir, 'missing.ts')], { env: childEnv });
    expect(missing.code).toBe(2);
    expect(missing.json.error).toEqual(expect.stringContaining('no such file'));
  });

  test('tools --json: {tools: [{name, activeVersion, status, updatedAt}]}', async () => {
    const { code, json } = await runForgeJson(['tools'], { env: childEnv });
    expect(code).toBe(0);
    expect(json.tools).toEqual([expect.objectContaining({ name: 'adder', activeVersion: 1, status: 'active', updatedAt: expect.any(String) })]);
    expect(Number.isNaN(Date.parse((json.tools as { updatedAt: string }[])[0].updatedAt))).toBe(false);
    const human = await runForge(['tools'], { env: childEnv });
    expect(human.code).toBe(0);
    expect(human.stdout).toMatch(/^adder\s+v1\s/);
  });

  test('call NAME --input JSON --json: {ok: true, output}; an unknown tool: {ok: false, error}, exit 1', async () => {
    const ok = await runForgeJson(['call', 'adder', '--input', '{"a":2,"b":3}'], { env: childEnv });
    expect(ok.code).toBe(0);
    expect(ok.json).toMatchObject({ ok: true, output: { sum: 5, variant: 'one' } });
    const unknown = await runForgeJson(['call', 'no_such_tool', '--input', '{}'], { env: childEnv });
    expect(unknown.code).toBe(1);
    expect(unknown.json).toMatchObject({ ok: false, error: expect.stringContaining('no_such_tool') });
    const badInput = await runForgeJson(['call', 'adder', '--input', '{"a":"x"}'], { env: childEnv });
    expect(badInput.code).toBe(1);
    expect(badInput.json).toMatchObject({ ok: false, error: expect.any(String) });
    const notJson = await runForgeJson(['call', 'adder', '--input', 'a=1'], { env: childEnv });
    expect(notJson.code).toBe(2);
    expect(notJson.json.error).toEqual(expect.stringContaining('--input is not JSON'));
  });

  test('a second version, then rollback --json (to the previous one) and rollback --to', async () => {
    const v2 = await runForge(['deploy', file('adder.ts', adderTool('two')), '--test-input', '{"a":1,"b":2}'], { env: childEnv });
    expect(v2.code).toBe(0);
    expect(v2.stdout).toBe('adder v2 is active (was v1).\n');

    const back = await runForgeJson(['rollback', 'adder'], { env: childEnv });
    expect(back.code).toBe(0);
    expect(back.json).toMatchObject({ status: 'active', name: 'adder', version: 1, previousVersion: 2, workflowId: expect.any(String) });
    expect((await runForgeJson(['call', 'adder', '--input', '{"a":1,"b":1}'], { env: childEnv })).json).toMatchObject({ output: { variant: 'one' } });

    const forward = await runForgeJson(['rollback', 'adder', '--to', 'v2'], { env: childEnv });
    expect(forward.code).toBe(0);
    expect(forward.json).toMatchObject({ status: 'active', version: 2, previousVersion: 1 });
    expect((await runForgeJson(['tools'], { env: childEnv })).json.tools).toEqual([expect.objectContaining({ name: 'adder', activeVersion: 2 })]);

    const nowhere = await runForgeJson(['rollback', 'adder', '--to', '9'], { env: childEnv });
    expect(nowhere.code).toBe(1);
    expect(nowhere.json).toMatchObject({ status: 'rejected', name: 'adder' });
    const badTo = await runForgeJson(['rollback', 'adder', '--to', 'latest'], { env: childEnv });
    expect(badTo.code).toBe(2);
    expect(badTo.json.error).toEqual(expect.stringContaining('--to'));
  });

  test('delete NAME --json: {status: "deleted"}; gone from tools and call; deleting again is refused', async () => {
    const gone = await runForgeJson(['delete', 'adder'], { env: childEnv });
    expect(gone.code).toBe(0);
    expect(gone.json).toMatchObject({ status: 'deleted', name: 'adder', workflowId: expect.any(String) });
    expect((await runForgeJson(['tools'], { env: childEnv })).json).toEqual({ tools: [] });
    const call = await runForgeJson(['call', 'adder', '--input', '{"a":1,"b":1}'], { env: childEnv });
    expect(call.code).toBe(1);
    expect(call.json.ok).toBe(false);
    const again = await runForgeJson(['delete', 'adder'], { env: childEnv });
    expect(again.code).toBe(1);
    expect(again.json).toMatchObject({ status: 'rejected', name: 'adder' });
  });
});

describe('schema through the CLI', () => {
  test('migrate --json: applied, then alreadyApplied (both exit 0); migrations --json lists it', async () => {
    const sql = file('notes.sql', 'CREATE TABLE agent_cli_notes (id bigint PRIMARY KEY, body text);\n');
    const applied = await runForgeJson(['migrate', '--name', 'cli_notes_1', sql], { env: childEnv });
    expect(applied.code).toBe(0);
    expect(applied.json).toMatchObject({ status: 'applied', name: 'cli_notes_1', checksum: expect.any(String), workflowId: expect.any(String) });
    expect(applied.stderr).toContain('migrating cli_notes_1');

    const again = await runForgeJson(['migrate', '--name', 'cli_notes_1', sql], { env: childEnv });
    expect(again.code).toBe(0);
    expect(again.json).toMatchObject({ status: 'alreadyApplied', name: 'cli_notes_1', checksum: applied.json.checksum });

    const list = await runForgeJson(['migrations'], { env: childEnv });
    expect(list.code).toBe(0);
    expect(list.json.migrations).toEqual([
      expect.objectContaining({ name: 'cli_notes_1', checksum: applied.json.checksum, appliedAt: expect.any(String), workflowId: applied.json.workflowId }),
    ]);
  });

  test('a migration the policy refuses: exit 1, {status: "rejected", statements}; from stdin too', async () => {
    const refused = await runForgeJson(['migrate', '--name', 'cli_drop', file('drop.sql', 'DROP TABLE agent_cli_notes;\n')], { env: childEnv });
    expect(refused.code).toBe(1);
    expect(refused.json).toMatchObject({ status: 'rejected', name: 'cli_drop' });
    expect(refused.json.statements).toEqual([expect.objectContaining({ accepted: false })]);
    // Without --json: the refused statement's reason is said once, with where it is (not three times over).
    const human = await runForge(['migrate', '--name', 'cli_drop', file('drop.sql', 'DROP TABLE agent_cli_notes;\n')], { env: childEnv });
    expect(human.code).toBe(1);
    const reason = (refused.json.statements as { message: string }[])[0].message;
    expect((human.stdout + human.stderr).split(reason).length - 1).toBe(1);
    expect(human.stdout).toMatch(
      /^cli_drop was rejected: 1 of 1 statement\(s\) refused by the schema policy; nothing ran\n {2}\[0\] DropStmt at line 1, column 1 \(drop-forbidden\): /,
    );

    const viaStdin = await runForgeJson(['migrate', '--name', 'cli_idx', '-'], {
      env: childEnv,
      stdin: 'CREATE INDEX agent_cli_notes_body ON agent_cli_notes (body);',
    });
    expect(viaStdin.code).toBe(0);
    expect(viaStdin.json).toMatchObject({ status: 'applied', name: 'cli_idx' });
    const names = ((await runForgeJson(['migrations'], { env: childEnv })).json.migrations as { name: string }[]).map((m) => m.name);
    expect(names).toEqual(['cli_notes_1', 'cli_idx']);
  });

  test('migrate without --name is bad usage: exit 2', async () => {
    const r = await runForgeJson(['migrate', path.join(dir, 'notes.sql')], { env: childEnv });
    expect(r.code).toBe(2);
    expect(r.json.error).toEqual(expect.stringContaining('--name'));
  });
});
