import { z } from 'zod';
import { BASE_UNITS_HELP, BASE_UNITS_PATTERN } from './base-units';
import { canonicalJson } from './hashes';
import { MAX_DEPLOY_SOURCE_BYTES, MAX_MIGRATION_SQL_BYTES, MAX_PROMOTION_BYTES, MAX_PROMOTION_FILES } from './limits';
import { FORGE_KINDS, RUN_STATUSES } from './kinds';
import { MIGRATION_NAME_PATTERN } from './migration-name';
import { parsePrice } from './price';
import { TOOL_NAME_PATTERN, toolNameMessage } from './tool-name';

/*
 * One zod schema per value an agent gives Forge, with its TypeScript type inferred from it (`z.input`: what a caller
 * writes), as the MCP and x402 SDKs do. The client validates its methods' inputs with these, and the MCP server lists
 * and validates its operations' arguments with the same schemas (extended only where JSON carries a value differently,
 * e.g. an amount as a string where the SDK also takes a bigint); configuration reads amounts with `baseUnits`.
 * Descriptions are part of the schema: they become the JSON Schema an MCP client reads.
 *
 * Loaded by the client, the MCP server and configuration only: the workflows and the CLI's start-up import the plain
 * files of contract/ (base-units.ts, tool-name.ts, ...), never this one, so no zod enters the workflow bundle.
 */

const utf8Bytes = (s: string): number => new TextEncoder().encode(s).length;

/** A tool name (TOOL_NAME_PATTERN), refused with the one sentence Forge says about a bad name. */
const toolName = z
  .string()
  .regex(TOOL_NAME_PATTERN, { error: (issue) => toolNameMessage(issue.input) })
  .describe('the tool name: 1-64 characters of a-z, 0-9 and _, starting with a letter');

/** An amount: a decimal string of whole base units of an asset (src/contract/base-units.ts). */
export const baseUnits = z.string().regex(BASE_UNITS_PATTERN, `must be ${BASE_UNITS_HELP}`);

/** An amount as the SDK takes it: base units as a decimal string, a bigint or a safe integer, none negative. */
const amount = z.union([baseUnits, z.bigint().nonnegative(), z.number().int().nonnegative()]);

/** A price as `forge sell --price` writes it: base units (`10000`) or money as x402 does (`$0.01`); src/contract/price.ts. */
export const priceText = z.string().superRefine((v, ctx) => {
  const read = parsePrice(v);
  if ('error' in read) ctx.addIssue({ code: 'custom', message: read.error });
});

/** An http:// or https:// URL. */
export const httpUrl = z.string().refine((v) => /^https?:\/\//.test(v) && URL.canParse(v), 'must be an http:// or https:// URL');

/** Any value JSON can carry (what a tool's input or test input is). */
const jsonValue = z.unknown().superRefine((value, ctx) => {
  try {
    const text = canonicalJson(value);
    if (text === undefined) ctx.addIssue({ code: 'custom', message: 'must be a JSON value (not undefined or a function)' });
  } catch (err) {
    ctx.addIssue({ code: 'custom', message: `must be a JSON value: ${(err as Error).message}` });
  }
});

/** `deployTool` (`forge deploy`, MCP `deploy_tool`). */
export const deployToolInput = z.object({
  name: toolName,
  source: z
    .string()
    .refine((s) => s.trim().length > 0, 'the source is empty')
    .refine((s) => utf8Bytes(s) <= MAX_DEPLOY_SOURCE_BYTES, `the source is over ${MAX_DEPLOY_SOURCE_BYTES} bytes`)
    .describe('the TypeScript module, as docs/tool-contract.md in the Forge repository describes it'),
  testInput: jsonValue.default({}).describe('the input the test run calls execute with (default {})'),
  description: z.string().max(2000).optional().describe("stored with the version; default: the module's own description"),
});
export type DeployToolInput = z.input<typeof deployToolInput>;

/** `rollbackTool` (`forge rollback`, MCP `rollback_tool`). */
export const rollbackToolInput = z.object({
  name: toolName,
  toVersion: z.number().int().positive().optional().describe('the version to make active; default: the newest stored version older than the active one'),
});
export type RollbackToolInput = z.input<typeof rollbackToolInput>;

/** `deleteTool` (`forge delete`, MCP `delete_tool`). */
export const deleteToolInput = z.object({ name: toolName });
export type DeleteToolInput = z.input<typeof deleteToolInput>;

/** `migrateSchema` (`forge migrate`, MCP `migrate_schema`). */
export const migrateSchemaInput = z.object({
  name: z
    .string()
    .regex(MIGRATION_NAME_PATTERN, 'a migration name is 1-128 characters of A-Z, a-z, 0-9, _, . and -, starting with a letter or digit')
    .describe("the migration's name, e.g. 0003_user_stars: its identity in forge_migrations and in the workflow ID schema-migrate/<name>"),
  sql: z
    .string()
    .refine((s) => s.trim().length > 0, 'the migration is empty')
    .refine((s) => utf8Bytes(s) <= MAX_MIGRATION_SQL_BYTES, `the migration is over ${MAX_MIGRATION_SQL_BYTES} bytes`)
    .describe('one or more SQL statements, judged by the schema policy and applied in one transaction'),
});
export type MigrateSchemaInput = z.input<typeof migrateSchemaInput>;

/** One file of a promotion: its path in the repository and its whole new content. */
const proposedChange = z.object({ path: z.string().min(1).max(4096).describe('relative to the repository'), content: z.string() });
export type ProposedChange = z.input<typeof proposedChange>;

/** `promoteBuiltin` (`forge promote`, MCP `promote_builtin`). */
export const promoteBuiltinInput = z.object({
  repo: z.string().min(1).optional().describe("the agent's repository: the path of its live checkout (default: the configured FORGE_BUILTIN_REPO)"),
  branch: z.string().min(1).max(255).optional().describe('the branch to promote into (default: the branch the live checkout has checked out)'),
  changes: z
    .array(proposedChange)
    .min(1, 'a promotion changes at least one file')
    .max(MAX_PROMOTION_FILES, `a promotion changes at most ${MAX_PROMOTION_FILES} files`)
    .refine(
      (changes) => changes.reduce((n, c) => n + utf8Bytes(c.content), 0) <= MAX_PROMOTION_BYTES,
      `the changed files hold more than ${MAX_PROMOTION_BYTES} bytes in all`,
    ),
  message: z.string().trim().min(1).max(10_000).optional().describe('the commit message (default: one naming the changed paths)'),
  dryRun: z.boolean().default(false).describe('verify everything, merge nothing'),
});
export type PromoteBuiltinInput = z.input<typeof promoteBuiltinInput>;

/** `listRuns` (`forge runs`, MCP `list_runs`). */
export const listRunsInput = z.object({
  kind: z.enum(FORGE_KINDS).optional(),
  status: z.enum(RUN_STATUSES).optional(),
  limit: z.number().int().positive().max(1000).default(20),
});

/** `pay` (`forge pay`, MCP `pay`): the request to pay for and the caller's limits. */
export const payInput = z.object({
  url: httpUrl
    // A password in a URL would travel in the run's input and history: refused, and (zod's message) never echoed.
    .refine(
      (v) => !URL.canParse(v) || (new URL(v).username === '' && new URL(v).password === ''),
      'must not carry credentials (user:password@): send them in a header',
    )
    .describe('the resource, http:// or https://'),
  method: z
    .string()
    .regex(/^[A-Z]+$/, 'must be an HTTP method in capitals (GET, POST, ...)')
    .optional()
    .describe('GET (default), POST, ...'),
  headers: z.record(z.string(), z.string()).optional(),
  body: z
    .string()
    .max(1024 * 1024, 'must be at most 1 MiB')
    .optional()
    .describe('the request body as sent, e.g. JSON text'),
  maxAmount: amount.optional().describe('the most this payment may cost, in base units (lowers the configured maximum)'),
  idempotencyKey: z
    .string()
    .min(1)
    .max(200, 'must be at most 200 characters')
    .optional()
    .describe("this payment's key: the same key, method, URL and body join the first run instead of paying again (default: a new key, returned)"),
});
export type PayOptionsInput = z.input<typeof payInput>;

/** `sell` (`forge sell`, MCP `sell_tool`), before the rule that a price and `stop` exclude each other (`sellInput`). */
export const sellInputFields = z.object({
  tool: toolName,
  price: z
    .union([priceText, z.bigint().positive(), z.number().int().positive()])
    .optional()
    .describe('per call: a whole number of base units of the sale asset ("10000"), or money as x402 writes it ("$0.01": whole tokens of the asset)'),
  stop: z.boolean().optional().describe('withdraw the offer'),
  description: z.string().max(1000).optional().describe("what buyers read (default: the tool's own description)"),
});

/** `sell`: a price to offer the tool at, or `stop: true` to withdraw it. */
export const sellInput = sellInputFields.refine((v) => (v.stop ? v.price === undefined : v.price !== undefined), {
  message: 'give a price, or stop: true to withdraw the offer (not both)',
  path: ['price'],
});
export type SellOptionsInput = z.input<typeof sellInput>;

/** `lint_sql` (`forge lint-sql`, MCP `lint_sql`): SQL judged against the schema policy; no database is touched. */
export const lintSqlInput = z.object({
  sql: z.string().describe('one or more SQL statements, judged as a migration would be'),
  schema: z.string().optional().describe('the schema migrations may touch (default public)'),
});

/** `getRun` (MCP `get_run`): one run by its workflow ID. */
export const getRunInput = z.object({ workflowId: z.string().min(1).describe("the run's workflow ID, as `forge runs` lists it") });

/** What can be done with the re-verification schedule (`forge reverify`, MCP `reverify`). */
const REVERIFY_ACTIONS = ['show', 'now', 'pause', 'resume'] as const;

/** MCP `reverify`: show the schedule (default), run it now, pause or resume it. */
export const reverifyInput = z.object({
  action: z.enum(REVERIFY_ACTIONS).optional().describe('show (default), now (run it and wait for the summary), pause or resume'),
});

/** `discoverServices` (`forge services`, MCP `list_services`): what an agent may ask of x402 discovery. */
export const listServicesInput = z.object({
  query: z.string().optional().describe('keep the services whose description or input mention every word of it'),
  network: z.string().optional().describe('keep the services paid on this network (CAIP-2, e.g. eip155:84532)'),
});

/**
 * `discoverServices` in the SDK: the same, and where to ask and how many, which only the caller's own program chooses
 * (not offered over MCP: an MCP client does not point the server at URLs of its choosing).
 */
export const discoverServicesInput = listServicesInput.extend({
  facilitatorUrl: httpUrl.optional().describe("the facilitator to ask (default: the worker's)"),
  limit: z.number().int().positive().optional(),
});
export type DiscoverServicesInput = z.input<typeof discoverServicesInput>;

/** How the P&L groups the ledger (`forge pnl --by`, MCP `get_pnl`). */
const PNL_GROUPINGS = ['tool', 'day'] as const;

/** `pnl` (`forge pnl`, MCP `get_pnl`). */
export const pnlInput = z.object({ by: z.enum(PNL_GROUPINGS).optional().describe('tool (default) or UTC day') });
export type PnlInput = z.input<typeof pnlInput>;

/**
 * `call` (`forge call`, MCP `call_tool`): an active tool by name and its input. The name is any string: one that breaks
 * the rule names no tool, and the registry answers not_found, as for any name it does not hold.
 */
export const callToolInput = z.object({
  name: z.string().describe(toolName.description ?? ''),
  input: jsonValue.optional().describe('the input (default {})'),
});
