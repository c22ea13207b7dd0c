import { z } from 'zod';
import type { ForgeClient, ProgressListener } from '../client';
import {
  baseUnits,
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
  priceText,
  promoteBuiltinInput,
  reverifyInput,
  rollbackToolInput,
  sellInputFields,
} from '../contract/inputs';
import type { DeployToolResult } from '../contract/tool-runs';
import type { MigrateSchemaResult } from '../contract/migration-runs';
import type { PromoteBuiltinResult } from '../contract/promotion-runs';
import type * as Policy from '../policy';
import type { ToolRegistry } from '../registry';
import { withOutcome } from '../run-outcome';

/** The policy parser (WebAssembly), loaded on the first lint, not when the server starts. */
// eslint-disable-next-line @typescript-eslint/no-require-imports
const policyModule = (): typeof Policy => require('../policy');

/** What an operation needs: the platform (connected on first use) and this process's registry. */
export interface OperationContext {
  forge(): Promise<ForgeClient>;
  registry: ToolRegistry;
  /** Told each change of a long run's progress when the MCP client asked for progress; undefined otherwise. */
  onProgress?: ProgressListener;
  signal: AbortSignal;
}

/** An operation's answer: the structured content (matching its output schema), one short line, and whether it was refused. */
export interface OperationResult {
  structured: Record<string, unknown>;
  text: string;
  isError: boolean;
}

/** The MCP tool annotations (spec 2025-06-18): hints a client shows or acts on, so they must be honest. */
interface Annotations {
  title: string;
  readOnlyHint: boolean;
  destructiveHint: boolean;
  idempotentHint: boolean;
  openWorldHint: boolean;
}

/** One of Forge's operations as an MCP tool; the schemas are Forge's zod, turned into JSON Schema by the server. */
export interface Operation {
  name: string;
  description: string;
  input: z.ZodObject;
  output: z.ZodObject;
  annotations: Annotations;
  run(args: unknown, ctx: OperationContext): Promise<OperationResult>;
}

function operation<I extends z.ZodObject>(def: {
  name: string;
  description: string;
  input: I;
  output: z.ZodObject;
  annotations: Annotations;
  run(args: z.output<I>, ctx: OperationContext): Promise<OperationResult>;
}): Operation {
  return def as Operation;
}

// Outputs are loose objects: a field Forge adds later must not make an MCP client's validation reject the result.
const stageRecord = z.looseObject({ name: z.string(), status: z.string(), durationMs: z.number().optional(), summary: z.string().optional() });
const location = z.looseObject({ line: z.number(), column: z.number().optional(), file: z.string().optional() });
const readOnly = (title: string): Annotations => ({ title, readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false });

/** Forge's operations, in the order a client lists them. */
export const OPERATIONS: Operation[] = [
  operation({
    name: 'deploy_tool',
    description:
      'Deploy a tool: a TypeScript module is compiled, tested in a bounded sandbox with testInput, persisted as a new ' +
      "version and made active, so it appears as an MCP tool of its own. The module: `import { z } from 'zod'; export " +
      "default { name: 'my_tool' /* equal to the name deployed */, description: '...', inputSchema: z.object({ n: " +
      'z.number() }), async execute(input, signal) { return { ... } /* JSON */ } };` (any installed package may be imported). ' +
      'A rejection says the stage (validate, compile, typecheck, test), the verdict, a message and, for compile and type ' +
      'errors, the location (type errors also in diagnostics.typeErrors, each with its TS code). ' +
      'The same content deploys once (idempotent).',
    // The arguments are the SDK's input, one schema (src/contract/inputs.ts): the same rules, the same messages.
    input: deployToolInput,
    output: z.looseObject({
      status: z.enum(['active', 'rejected']),
      name: z.string(),
      version: z.number().int().optional(),
      previousVersion: z.number().int().optional(),
      unchanged: z.boolean().optional(),
      workflowId: z.string(),
      verdict: z.string().describe('the sandbox verdict (passed, failed, invalid, timeout, oom, crashed, output_limit) or refused'),
      stage: z.string().describe('the stage that decided: validate, compile, typecheck, test, commit or notify'),
      message: z.string(),
      location: location.optional().describe('where a compile error, or the type error that rejected the tool, is'),
      steps: z.array(stageRecord).describe("the run's steps as its progress showed them (every run's result has them)"),
      diagnostics: z.looseObject({ stages: z.array(stageRecord) }),
    }),
    annotations: { title: 'Deploy a tool', readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: false },
    async run(args, ctx) {
      const forge = await ctx.forge();
      const result = await forge.deployTool(args, { onProgress: ctx.onProgress });
      // Answer once this process's registry serves the new version, so the client's next tools/list has it.
      if (result.status === 'active' && result.version !== undefined) await settle(ctx.registry.waitFor(result.name, result.version));
      return deployAnswer(result);
    },
  }),
  operation({
    name: 'rollback_tool',
    description:
      'Make an earlier version of a tool active again (default: the newest version older than the active one). Refused, ' +
      'with the reason, when there is no such version.',
    input: rollbackToolInput,
    output: z.looseObject({
      status: z.enum(['active', 'rejected']),
      name: z.string(),
      version: z.number().int().optional(),
      previousVersion: z.number().int().optional(),
      workflowId: z.string(),
      message: z.string(),
    }),
    // Without toVersion each call moves one version further back.
    annotations: { title: 'Roll a tool back', readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: false },
    async run(args, ctx) {
      const forge = await ctx.forge();
      const result = await forge.rollbackTool(args.name, { toVersion: args.toVersion });
      if (result.status === 'active' && result.version !== undefined) await settle(ctx.registry.waitFor(result.name, result.version));
      return { structured: { ...result }, text: result.message, isError: result.status !== 'active' };
    },
  }),
  operation({
    name: 'delete_tool',
    description: 'Deactivate a tool and remove all its versions (it disappears from the MCP tool list).',
    input: deleteToolInput,
    output: z.looseObject({
      status: z.enum(['deleted', 'rejected']),
      name: z.string(),
      previousVersion: z.number().int().optional(),
      removedVersions: z.number().int().optional(),
      workflowId: z.string(),
      message: z.string(),
    }),
    annotations: { title: 'Delete a tool', readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false },
    async run(args, ctx) {
      const forge = await ctx.forge();
      const result = await forge.deleteTool(args.name);
      if (result.status === 'deleted') await settle(ctx.registry.waitFor(result.name, (t) => t === undefined));
      return { structured: { ...result }, text: result.message, isError: result.status !== 'deleted' };
    },
  }),
  operation({
    name: 'list_tools',
    description: 'The agent-authored tools Forge holds: active version, status (active, degraded, quarantined), description.',
    input: z.object({}),
    output: z.looseObject({
      tools: z.array(
        z.looseObject({
          name: z.string(),
          activeVersion: z.number().int().nullable(),
          status: z.string(),
          updatedAt: z.string(),
          description: z.string().optional(),
          versions: z.number().int(),
        }),
      ),
    }),
    annotations: readOnly('List tools'),
    async run(_args, ctx) {
      const result = await (await ctx.forge()).listTools();
      const text = result.tools.length === 0 ? 'No tools yet.' : result.tools.map((t) => `${t.name} v${t.activeVersion ?? '-'} ${t.status}`).join('\n');
      return { structured: { ...result }, text, isError: false };
    },
  }),
  operation({
    name: 'call_tool',
    description:
      "Call an active tool's current version by name, in a bounded sandbox process (as every agent tool listed here is " +
      'called): {ok, output} or {ok: false, status, error}.',
    input: callToolInput,
    output: z.looseObject({
      ok: z.boolean(),
      name: z.string(),
      version: z.number().int().optional(),
      output: z.unknown().optional(),
      status: z.string().optional().describe('why it failed: a sandbox verdict, not_found, unavailable or closed'),
      error: z.string().optional(),
      durationMs: z.number(),
    }),
    // It runs whatever the agent deployed: nothing is known of what that does.
    annotations: { title: 'Call a tool', readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: true },
    async run(args, ctx) {
      const result = await ctx.registry.invoke(args.name, args.input ?? {}, { signal: ctx.signal });
      const structured = result.ok
        ? { ok: true, name: result.name, version: result.version, output: result.output, durationMs: result.durationMs }
        : { ok: false, name: result.name, version: result.version, status: result.status, error: result.error, durationMs: result.durationMs };
      return { structured, text: result.ok ? JSON.stringify(result.output) : `${result.name}: ${result.status}: ${result.error}`, isError: !result.ok };
    },
  }),
  operation({
    name: 'lint_sql',
    description: 'Judge a migration against the schema policy (no database touched): each statement accepted or not, with its rule, message and location.',
    input: lintSqlInput,
    output: z.looseObject({
      accepted: z.boolean(),
      statements: z.array(
        z.looseObject({
          index: z.number().int(),
          kind: z.string(),
          accepted: z.boolean(),
          rule: z.string().optional(),
          message: z.string().optional(),
          location: location.optional(),
        }),
      ),
      problem: z.looseObject({ rule: z.string(), message: z.string() }).optional(),
    }),
    annotations: readOnly('Check SQL against the schema policy'),
    async run(args) {
      const { checkMigration } = policyModule();
      const report = await checkMigration(args.sql, { schema: args.schema ?? 'public' });
      const refused = report.statements.filter((s) => !s.accepted);
      const text = report.accepted
        ? `accepted (${report.statements.length} statement(s))`
        : report.problem
          ? `rejected (${report.problem.rule}): ${report.problem.message}`
          : `rejected: ${refused.map((s) => `[${s.index}]${s.location ? ` line ${s.location.line}` : ''} ${s.rule}: ${s.message ?? ''}`).join('; ') || 'no statement'}`;
      return { structured: { ...report }, text, isError: !report.accepted };
    },
  }),
  operation({
    name: 'migrate_schema',
    description:
      'Apply a schema migration: checked by the schema policy, then applied in one transaction with its tracking row. A ' +
      'name is applied once (again: alreadyApplied). A refusal or failure says why and where (line, column).',
    input: migrateSchemaInput,
    output: z.looseObject({
      status: z.enum(['applied', 'alreadyApplied', 'rejected', 'failed']),
      name: z.string(),
      checksum: z.string(),
      workflowId: z.string(),
      message: z.string(),
      stage: z.string().optional(),
      location: location.optional(),
      steps: z.array(stageRecord).describe("the run's steps as its progress showed them (every run's result has them)"),
    }),
    annotations: { title: 'Migrate the schema', readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false },
    async run(args, ctx) {
      const result = await (await ctx.forge()).migrateSchema(args, { onProgress: ctx.onProgress });
      return migrationAnswer(result);
    },
  }),
  operation({
    name: 'list_migrations',
    description: 'The applied schema migrations, oldest first.',
    input: z.object({}),
    output: z.looseObject({ migrations: z.array(z.looseObject({ name: z.string(), checksum: z.string(), appliedAt: z.string() })) }),
    annotations: readOnly('List migrations'),
    async run(_args, ctx) {
      const result = await (await ctx.forge()).listMigrations();
      return { structured: { ...result }, text: `${result.migrations.length} migration(s) applied`, isError: false };
    },
  }),
  operation({
    name: 'list_runs',
    description: "Recent Forge runs (deployments, migrations, promotions, re-verifications), newest first, with each run's outcome and stage.",
    input: listRunsInput,
    output: z.looseObject({
      runs: z.array(
        z.looseObject({
          workflowId: z.string(),
          status: z.string(),
          outcome: z.string(),
          kind: z.string().optional(),
          stage: z.string().optional(),
          startTime: z.string(),
        }),
      ),
    }),
    annotations: readOnly('List runs'),
    async run(args, ctx) {
      const forge = await ctx.forge();
      const listed = await forge.listRuns(args);
      const runs = await Promise.all(listed.map((run) => withOutcome(forge, run)));
      return { structured: { runs }, text: runs.map((r) => `${r.workflowId} ${r.outcome}`).join('\n') || 'No runs match.', isError: false };
    },
  }),
  operation({
    name: 'get_run',
    description: 'Everything Forge knows of one run by its workflow ID: status, stage, live progress, and its result or failure.',
    input: getRunInput,
    output: z.looseObject({ workflowId: z.string(), status: z.string(), type: z.string(), stage: z.string().optional(), outcome: z.string().optional() }),
    annotations: readOnly('Show a run'),
    async run(args, ctx) {
      const info = await (await ctx.forge()).getRun(args.workflowId);
      return {
        structured: { ...info },
        text: `${info.workflowId}: ${info.status}${info.outcome ? ` (${info.outcome})` : ''}${info.stage ? ` at ${info.stage}` : ''}`,
        isError: false,
      };
    },
  }),
  operation({
    name: 'promote_builtin',
    description:
      "Promote a change to the agent's own built-in code: the files are committed in an ephemeral worktree, compiled, " +
      'tested and smoke-started there, and only then fast-forwarded onto the branch. dryRun verifies without merging. A ' +
      'rejection says the stage, the category, the reason and the file:line locations the tools printed.',
    input: promoteBuiltinInput,
    output: z.looseObject({
      status: z.enum(['promoted', 'rejected', 'verified']),
      workflowId: z.string(),
      baseCommit: z.string(),
      mergedCommit: z.string().optional(),
      message: z.string(),
      stage: z.string().optional(),
      location: location.optional(),
      steps: z.array(stageRecord).describe("the run's steps as its progress showed them (every run's result has them)"),
      diagnostics: z.looseObject({}),
    }),
    annotations: { title: 'Promote a built-in change', readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: false },
    async run(args, ctx) {
      const result = await (await ctx.forge()).promoteBuiltin(args, { onProgress: ctx.onProgress });
      return promotionAnswer(result);
    },
  }),
  operation({
    name: 'reverify',
    description:
      'The re-verification schedule: `show` it (default), `pause` or `resume` it, or run it `now` and wait for the summary ' +
      '(every active tool tested again; what fails twice is degraded to an earlier version or quarantined).',
    input: reverifyInput,
    output: z.looseObject({ action: z.string(), schedule: z.looseObject({}).optional(), summary: z.looseObject({}).optional() }),
    // `now` may quarantine tools.
    annotations: { title: 'Re-verify tools', readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: false },
    async run(args, ctx) {
      const forge = await ctx.forge();
      const action = args.action ?? 'show';
      if (action === 'now') {
        const summary = await forge.reverifyNow({ onProgress: ctx.onProgress });
        const text = `re-verified ${summary.counts.tested} tool(s): ${summary.counts.passed} passed, ${summary.counts.failed} failed; quarantined: ${summary.quarantined.join(', ') || 'none'}`;
        return { structured: { action, summary: { ...summary } }, text, isError: false };
      }
      const schedule = action === 'pause' ? await forge.pauseReverify() : action === 'resume' ? await forge.resumeReverify() : await forge.reverifySchedule();
      return {
        structured: { action, schedule: { ...schedule } },
        text: `schedule ${schedule.scheduleId}: ${schedule.paused ? 'paused' : 'active'}`,
        isError: false,
      };
    },
  }),
  operation({
    name: 'pay',
    description:
      "Pay for an HTTP resource over x402 with the platform's wallet, exactly once: the 402's terms are checked against " +
      'the spend policy (per-payment maximum, daily budget, allowed payees, networks and assets) before anything is ' +
      'signed. The chain, not the seller, decides: paid (settled on the chain), failed (the authorization cancelled or ' +
      'expired: nothing paid), pending (the chain cannot say yet; the amount stays reserved). Returns the response ' +
      '(status, body) of a paid request, or the limit that refused it with the amounts. Pass the same idempotencyKey to ' +
      'retry without paying twice. Amounts are base units of the asset (1000000 = 1.00 of a 6-decimals token).',
    // JSON has no bigint: an amount is base units as a string. The method may be in any case (it is sent in capitals).
    input: payInput.extend({
      method: z.string().optional().describe('GET (default), POST, ...'),
      maxAmount: baseUnits.optional().describe(payInput.shape.maxAmount.description ?? ''),
    }),
    output: z.looseObject({
      status: z.enum(['paid', 'refused', 'failed', 'pending']),
      idempotencyKey: z.string().optional(),
      workflowId: z.string(),
      httpStatus: z.number().optional(),
      body: z.string().optional(),
      amount: z.string().optional(),
      asset: z.string().optional(),
      network: z.string().optional(),
      payTo: z.string().optional(),
      txHash: z.string().optional(),
      limit: z.string().optional(),
      reason: z.string().optional(),
    }),
    // It spends money (not destructive of Forge's state) and reaches the outside world; a repeat without the same
    // idempotencyKey pays again.
    annotations: { title: 'Pay for a resource (x402)', readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: true },
    async run(args, ctx) {
      const { url, ...options } = args;
      const r = await (await ctx.forge()).pay(url, { ...options, method: options.method?.toUpperCase(), onProgress: ctx.onProgress });
      const text =
        r.status === 'paid'
          ? `paid ${r.amount} of ${r.asset ?? 'nothing'}${r.txHash ? ` (${r.txHash})` : ''}; HTTP ${r.httpStatus ?? 'no answer'}`
          : r.status === 'refused'
            ? `refused (${r.limit}): ${r.reason}`
            : `${r.status}: ${r.reason}`;
      return { structured: { ...r }, text, isError: r.status !== 'paid' };
    },
  }),
  operation({
    name: 'sell_tool',
    description:
      'Offer an active tool as a paid x402 endpoint of the platform (price per call in base units, or money as x402 writes it: "$0.01"), or withdraw it ' +
      '(stop: true). Returns the URL buyers POST its input to; its input schema is published for discovery.',
    // A price in JSON is text; that a price and stop exclude each other the SDK says (its ForgeInputError is the answer).
    input: sellInputFields.extend({ price: priceText.optional().describe(sellInputFields.shape.price.description ?? '') }),
    output: z.looseObject({
      status: z.enum(['offered', 'withdrawn', 'refused']),
      tool: z.string(),
      workflowId: z.string(),
      url: z.string().optional(),
      price: z.string().optional(),
      reason: z.string().optional(),
    }),
    annotations: { title: 'Sell a tool (x402)', readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: true },
    async run(args, ctx) {
      const r = await (await ctx.forge()).sell(args.tool, { price: args.price, stop: args.stop, description: args.description });
      const text =
        r.status === 'offered'
          ? `${r.tool} is sold at ${r.url} for ${r.price} base units${r.priceGiven ? ` (${r.priceGiven})` : ''}`
          : r.status === 'withdrawn'
            ? `${r.tool} is no longer sold`
            : `refused: ${r.reason}`;
      return { structured: { ...r }, text, isError: r.status === 'refused' };
    },
  }),
  operation({
    name: 'list_services',
    description:
      "Services offered over x402, as the facilitator's bazaar discovery lists them, with their price and input schema; query keeps those mentioning every word.",
    input: listServicesInput,
    output: z.looseObject({ facilitatorUrl: z.string(), services: z.array(z.looseObject({ url: z.string() })) }),
    annotations: { ...readOnly('Discover x402 services'), openWorldHint: true },
    async run(args, ctx) {
      const r = await (await ctx.forge()).discoverServices(args);
      return { structured: { ...r }, text: `${r.services.length} service(s) at ${r.facilitatorUrl}`, isError: false };
    },
  }),
  operation({
    name: 'get_pnl',
    description: 'The x402 ledger: settled income (tools sold), spend (resources paid for) and net, by tool or by UTC day, in base units.',
    input: pnlInput,
    output: z.looseObject({
      by: z.string(),
      rows: z.array(z.looseObject({ key: z.string() })),
      totals: z.looseObject({ income: z.string(), spend: z.string(), net: z.string() }),
    }),
    annotations: readOnly('Profit and loss'),
    async run(args, ctx) {
      const r = await (await ctx.forge()).pnl({ by: args.by });
      return { structured: { ...r }, text: `income ${r.totals.income}, spend ${r.totals.spend}, net ${r.totals.net}`, isError: false };
    },
  }),
];

/** Waits for this process's registry to catch up; a registry that does not (another host's directory) only delays. */
async function settle(wait: Promise<unknown>): Promise<void> {
  await wait.catch(() => undefined);
}

function deployAnswer(r: DeployToolResult): OperationResult {
  const d = r.diagnostics;
  // A type error locates a rejection only (with FORGE_TYPECHECK=warn, an active result carries them in diagnostics).
  const first = (d.compileErrors ?? (r.status === 'rejected' ? d.typeErrors : undefined))?.find((e) => e.location)?.location;
  const structured = {
    ...r,
    stage: d.stage,
    message: d.message,
    ...(first ? { location: { file: first.file, line: first.line, column: first.column } } : {}),
  };
  const text =
    r.status === 'active'
      ? r.unchanged
        ? `${r.name} v${r.version} is already active with this content; nothing changed.`
        : `${r.name} v${r.version} is active${r.previousVersion !== undefined ? ` (was v${r.previousVersion})` : ''}.`
      : `${r.name} was rejected at ${d.stage} (${r.verdict}): ${d.message}`;
  return { structured, text, isError: r.status !== 'active' };
}

function migrationAnswer(r: MigrateSchemaResult): OperationResult {
  const refused = r.statements?.find((s) => !s.accepted);
  const where = r.error?.line !== undefined ? { line: r.error.line, column: r.error.column } : (refused?.location ?? r.problem?.location);
  const failedStage = r.steps.find((s) => s.status === 'failed')?.name;
  const structured = {
    ...r,
    ...(failedStage ? { stage: failedStage } : {}),
    ...(where ? { location: { line: where.line, column: where.column } } : {}),
  };
  return { structured, text: `${r.name}: ${r.status}: ${r.message}`, isError: r.status === 'rejected' || r.status === 'failed' };
}

function promotionAnswer(r: PromoteBuiltinResult): OperationResult {
  const failure = r.diagnostics.failure;
  const failed = r.diagnostics.stages.find((s) => s.status !== 'pass' && s.status !== 'skipped');
  const first = failed?.locations?.[0];
  const structured = {
    ...r,
    ...(failure ? { stage: failure.stage, category: failure.category } : {}),
    ...(first ? { location: { file: first.file, line: first.line, column: first.column, message: first.message } } : {}),
  };
  const text =
    r.status === 'rejected'
      ? `rejected at ${failure?.stage ?? 'an unknown step'} (${failure?.category ?? 'infra'}): ${r.message}`
      : `${r.status}: ${r.message}`;
  return { structured, text, isError: r.status === 'rejected' };
}
