import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import {
  callToolInput,
  deleteToolInput,
  deployToolInput,
  getRunInput,
  lintSqlInput,
  listRunsInput,
  listServicesInput,
  migrateSchemaInput,
  payInput,
  pnlInput,
  promoteBuiltinInput,
  reverifyInput,
  rollbackToolInput,
  sellInputFields,
} from '../../src/contract/inputs';
import { OPERATIONS } from '../../src/mcp/operations';

/*
 * Issue 29: one schema per value, in contract/. A rule written again by hand drifts (the amount pattern was in seven
 * places, every input described three ways): these fail when a copy comes back.
 */

const src = path.resolve(__dirname, '..', '..', 'src');

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const full = path.join(dir, e.name);
    if (e.isDirectory()) return sourceFiles(full);
    return e.name.endsWith('.ts') && !e.name.endsWith('.d.ts') ? [full] : [];
  });
}

const files = sourceFiles(src).map((file) => ({ file: path.relative(src, file), text: readFileSync(file, 'utf8') }));

test('the amount rule (78 digits of base units) is written once, in contract/base-units.ts', () => {
  const copies = files.filter(({ file, text }) => file !== path.join('contract', 'base-units.ts') && /\\d\{(1,78|0,77)\}/.test(text)).map((f) => f.file);
  expect(copies).toEqual([]);
});

test('no core folder, activity or workflow names a CLI flag: the CLI phrases its own', () => {
  const core = ['contract', 'x402', 'sandbox', 'policy', 'registry', 'db', 'git', 'activities', 'workflows'];
  const naming = files
    .filter(({ file }) => core.includes(file.split(path.sep)[0]))
    .filter(({ text }) => /\bset by --max\b|\bby --max\b/.test(text))
    .map((f) => f.file);
  expect(naming).toEqual([]);
});

test("the MCP operations take the SDK's inputs: the same schemas, extended only where JSON carries a value differently", () => {
  const input = (name: string) => OPERATIONS.find((op) => op.name === name)!.input;
  expect(input('deploy_tool')).toBe(deployToolInput);
  expect(input('rollback_tool')).toBe(rollbackToolInput);
  expect(input('delete_tool')).toBe(deleteToolInput);
  expect(input('migrate_schema')).toBe(migrateSchemaInput);
  expect(input('promote_builtin')).toBe(promoteBuiltinInput);
  expect(input('list_runs')).toBe(listRunsInput);
  expect(input('lint_sql')).toBe(lintSqlInput);
  expect(input('get_run')).toBe(getRunInput);
  expect(input('reverify')).toBe(reverifyInput);
  expect(input('list_services')).toBe(listServicesInput);
  expect(input('get_pnl')).toBe(pnlInput);
  expect(input('call_tool')).toBe(callToolInput);
  for (const field of ['url', 'headers', 'body', 'idempotencyKey'] as const) expect(input('pay').shape[field]).toBe(payInput.shape[field]);
  for (const field of ['tool', 'stop', 'description'] as const) expect(input('sell_tool').shape[field]).toBe(sellInputFields.shape[field]);
});

test('neither the client nor the MCP server writes an input schema of its own for what contract/inputs.ts describes', () => {
  const client = files.find((f) => f.file === 'client.ts')!.text;
  const mcp = files.find((f) => f.file === path.join('mcp', 'operations.ts'))!.text;
  // The client's zod is parseInput's type and pay()'s listener; the schemas are contract/'s.
  expect(client.match(/z\.(object|string|union|array|number)\(/g) ?? []).toEqual([]);
  expect(mcp).not.toMatch(/\.regex\(/);
  // Every operation's input is contract/'s: an operation that takes nothing says so with z.object({}), and the two
  // that carry a value differently in JSON (pay's amount, sell's price) extend contract/'s schema.
  expect(mcp.match(/input: z\.object\(\{[^}]/g) ?? []).toEqual([]);
});

test("the SDK's inputs are refused with contract/'s rules and messages, as the MCP server refuses them", () => {
  expect(pnlInput.safeParse({ by: 'week' }).success).toBe(false);
  expect(getRunInput.safeParse({ workflowId: '' }).success).toBe(false);
  expect(reverifyInput.safeParse({ action: 'later' }).success).toBe(false);
  expect(callToolInput.safeParse({ name: 'add', input: { a: 1 } }).success).toBe(true);
  expect(lintSqlInput.safeParse({ sql: 'SELECT 1' }).success).toBe(true);
});

test('an amount is refused with one message wherever it enters', () => {
  const bad = payInput.safeParse({ url: 'https://example.com/', maxAmount: '1.5' });
  expect(bad.success).toBe(false);
  expect(bad.error?.issues[0].message).toBe('must be a whole number of base units (1000000 is 1.00 of a 6-decimals token)');
  const mcpPay = OPERATIONS.find((op) => op.name === 'pay')!.input.safeParse({ url: 'https://example.com/', maxAmount: '-1' });
  expect(mcpPay.error?.issues[0].message).toBe(bad.error?.issues[0].message);
});
