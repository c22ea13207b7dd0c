import type { Command } from 'commander';
import { CALLER_MAXIMUM_NOTE, type PayResult, type PnlResult, type SellResult, type ServicesResult } from '../contract/pay-runs';
import { WAIT_HELP, withForgeClient } from './connect';
import { ExitCode, UsageError } from './exit-codes';
import { printResult } from './output';
import { progressPrinter } from './progress-display';
import { collect } from './repeatable';
import { parsePrice } from '../contract/price';
import { BASE_UNITS_HELP, isBaseUnits } from '../contract/base-units';

/**
 * `forge pay URL [--method M] [--header 'K: V' ...] [--body TEXT] [--max AMOUNT] [--idempotency-key K] [--json]`: through PayWorkflow (CLI.md
 * "Payments"). AMOUNT in base units of the asset (1000000 = 1.00 of a 6-decimals token).
 */
export function registerPay(program: Command): void {
  program
    .command('pay')
    .description("Pay for an HTTP resource over x402 with the worker's wallet, within the spend policy, exactly once")
    .argument('<url>', 'the resource (http:// or https://)')
    .option('--method <method>', 'the HTTP method (default GET)')
    .option('--header <header>', "a request header, 'Name: value' (repeatable)", collect, [])
    .option('--body <text>', 'the request body, as sent (e.g. JSON)')
    .option('--max <amount>', 'the most this payment may cost, in base units of the asset (lowers the configured maximum)')
    .option(
      '--idempotency-key <key>',
      "this payment's key: paying again with the same key, method, URL and body joins the first run instead of paying twice (default: a new key, printed)",
    )
    .option('--json', 'print one JSON object')
    .option('--wait', WAIT_HELP)
    .action(
      async (
        url: string,
        opts: { method?: string; header: string[]; body?: string; max?: string; idempotencyKey?: string; json?: boolean; wait?: boolean },
      ) => {
        if (opts.max !== undefined && !isBaseUnits(opts.max)) {
          throw new UsageError(`--max ${JSON.stringify(opts.max)}: write ${BASE_UNITS_HELP}`);
        }
        const headers: Record<string, string> = {};
        for (const h of opts.header) {
          const colon = h.indexOf(':');
          if (colon <= 0) throw new UsageError(`--header ${JSON.stringify(h)}: write 'Name: value'`);
          headers[h.slice(0, colon).trim()] = h.slice(colon + 1).trim();
        }
        const result = await withForgeClient(
          (forge) =>
            forge.pay(url, {
              method: opts.method?.toUpperCase(),
              headers: opts.header.length > 0 ? headers : undefined,
              body: opts.body,
              maxAmount: opts.max,
              idempotencyKey: opts.idempotencyKey,
              onProgress: opts.json ? undefined : progressPrinter(),
            }),
          { wait: opts.wait },
        );
        printResult(!!opts.json, result, () => describePayment(result, opts.max));
        process.exitCode = result.status === 'paid' ? ExitCode.ok : ExitCode.refused;
      },
    );
}

function describePayment(r: PayResult, max: string | undefined): string {
  const lines: string[] = [];
  if (r.status === 'paid') {
    lines.push(
      r.amount === '0'
        ? `✓ no payment was asked; HTTP ${r.httpStatus}`
        : `✓ paid ${r.amount} of ${r.asset} on ${r.network} to ${r.payTo}${r.txHash ? ` (transaction ${r.txHash})` : ''}; HTTP ${r.httpStatus ?? '(no answer)'}`,
    );
  } else if (r.status === 'refused') {
    lines.push(`✗ refused by the spend policy (${r.limit}): ${r.reason}`);
    // The spend policy says a maximum was set for this payment; which flag set it is the CLI's to say.
    if (r.limit === 'maxPerPayment' && max !== undefined && r.reason?.includes(CALLER_MAXIMUM_NOTE)) lines.push(`  --max ${max} set this payment's maximum.`);
    lines.push('  Nothing was signed or paid.');
  } else if (r.status === 'pending') {
    lines.push(`… payment pending: ${r.reason}`, '  The amount stays reserved against the budget until the chain decides; `forge pnl` counts it once settled.');
  } else {
    lines.push(`✗ payment failed: ${r.reason}`);
  }
  if (r.reason && r.status === 'paid' && r.amount !== '0') lines.push(`  note: ${r.reason}`);
  lines.push(`  run ${r.workflowId}`);
  if (r.idempotencyKey)
    lines.push(`  idempotency key ${r.idempotencyKey} (pay again with --idempotency-key ${r.idempotencyKey} to join this run, never to pay twice)`);
  if (r.body !== undefined && r.status !== 'refused') lines.push('', r.body + (r.bodyTruncated ? '\n… (cut: the response was longer)' : ''));
  return lines.join('\n');
}

/** `forge pnl [--by tool|day] [--json]`: settled income, spend and net from the ledger (CLI.md "Payments"). */
export function registerPnl(program: Command): void {
  program
    .command('pnl')
    .description('Profit and loss of x402 payments: income from tools sold, spend on resources paid for, and net')
    .option('--by <key>', 'tool or day', 'tool')
    .option('--json', 'print one JSON object')
    .option('--wait', WAIT_HELP)
    .action(async (opts: { by: string; json?: boolean; wait?: boolean }) => {
      if (opts.by !== 'tool' && opts.by !== 'day') throw new UsageError(`--by must be tool or day, not ${JSON.stringify(opts.by)}`);
      const by = opts.by;
      const result = await withForgeClient((forge) => forge.pnl({ by }), { wait: opts.wait });
      printResult(!!opts.json, result, () => describePnl(result));
      process.exitCode = ExitCode.ok;
    });
}

function describePnl(r: PnlResult): string {
  if (r.rows.length === 0)
    return 'No settled x402 payment yet: the ledger is empty. Pay with `forge pay URL`, or sell a tool with `forge sell TOOL --price AMOUNT`.';
  const width = Math.max(8, ...r.rows.map((row) => row.key.length));
  const numbers = [...r.rows.flatMap((row) => [row.income, row.spend, row.net]), r.totals.income, r.totals.spend, r.totals.net];
  const n = Math.max(6, ...numbers.map((v) => v.length));
  const line = (key: string, income: string, spend: string, net: string) =>
    `${key.padEnd(width)}  ${income.padStart(n)}  ${spend.padStart(n)}  ${net.padStart(n)}`;
  const out = [line(r.by, 'income', 'spend', 'net'), ...r.rows.map((row) => line(row.key, row.income, row.spend, row.net))];
  out.push(line('total', r.totals.income, r.totals.spend, r.totals.net));
  out.push(
    r.assets.length === 1
      ? `(base units of ${r.assets[0].asset} on ${r.assets[0].network})`
      : `(base units; ${r.assets.length} assets: totals add different tokens — see --json for each row's asset)`,
  );
  return out.join('\n');
}

/** `forge sell TOOL --price AMOUNT [--description TEXT] [--json]`, `forge sell TOOL --stop`: through SellToolWorkflow. */
export function registerSell(program: Command): void {
  program
    .command('sell')
    .description('Offer an active tool as a paid x402 endpoint of the worker (or withdraw it with --stop)')
    .argument('<tool>', 'an active tool')
    .option(
      '--price <amount>',
      'per call: money as x402 writes it ($0.01, or 0.01 USD: whole tokens of the sale asset), or a whole number of base units (10000 = $0.01 of a 6-decimals token)',
    )
    .option('--description <text>', "what buyers read (default: the tool's own description)")
    .option('--stop', 'stop selling it')
    .option('--json', 'print one JSON object')
    .option('--wait', WAIT_HELP)
    .action(async (tool: string, opts: { price?: string; description?: string; stop?: boolean; json?: boolean; wait?: boolean }) => {
      if (!!opts.stop === (opts.price !== undefined)) throw new UsageError('give --price AMOUNT, or --stop to withdraw the offer');
      const price = opts.price === undefined ? undefined : parsePrice(opts.price);
      if (price && 'error' in price) throw new UsageError(`--price: ${price.error}`);
      const result = await withForgeClient((forge) => forge.sell(tool, { price: opts.price, stop: opts.stop, description: opts.description }), {
        wait: opts.wait,
      });
      printResult(!!opts.json, result, () => describeSale(result));
      // Money finer than the asset's decimals is only known to be bad input once the worker has its decimals.
      process.exitCode = result.problem === 'price' ? ExitCode.usage : result.status === 'refused' ? ExitCode.refused : ExitCode.ok;
    });
}

/** What the base units come to: ` ($0.01 at 6 decimals)` for a price given in money, ` (0.01 of the token, 6 decimals)` else. */
function inTokens(r: SellResult): string {
  if (r.priceInTokens === undefined) return '';
  return r.priceGiven ? ` (${r.priceGiven} at ${r.decimals} decimals)` : ` (${r.priceInTokens} of the token, ${r.decimals} decimals)`;
}

function describeSale(r: SellResult): string {
  if (r.status === 'refused') return `✗ ${r.reason}`;
  if (r.status === 'withdrawn') return `✓ ${r.tool} is no longer sold`;
  return [
    `✓ ${r.tool} is sold at ${r.url}`,
    `  ${r.price} base units of ${r.asset} on ${r.network} per call${inTokens(r)}, paid to ${r.payTo}`,
    `  POST its input as JSON with an x402 payment (e.g. \`forge pay ${r.url} --method POST --body '{...}'\`)`,
    ...(r.warnings ?? []).map((w) => `  note: ${w}`),
  ].join('\n');
}

/** `forge services [--query Q] [--json]`: what the facilitator's bazaar discovery lists. */
export function registerServices(program: Command): void {
  program
    .command('services')
    .description('Services offered over x402, as the facilitator lists them (bazaar discovery)')
    .option('--query <words>', 'only services whose description or input mention every word')
    .option('--facilitator <url>', 'the facilitator to ask (default: the one the worker uses)')
    .option('--json', 'print one JSON object')
    .action(async (opts: { query?: string; facilitator?: string; json?: boolean }) => {
      const result = await withForgeClient((forge) => forge.discoverServices({ query: opts.query, facilitatorUrl: opts.facilitator }));
      printResult(!!opts.json, result, () => describeServices(result, opts.query));
      process.exitCode = ExitCode.ok;
    });
}

function describeServices(r: ServicesResult, query: string | undefined): string {
  if (r.services.length === 0) return `No service is listed at ${r.facilitatorUrl}${query ? ` for "${query}"` : ''}.`;
  return r.services
    .map((s) => {
      const fields = s.inputSchema && typeof s.inputSchema === 'object' ? Object.keys((s.inputSchema as { properties?: object }).properties ?? {}) : [];
      return [
        `${s.method ?? 'GET'} ${s.url}`,
        `  ${s.price ?? '?'} of ${s.asset ?? '?'} on ${s.network ?? '?'}${s.description ? ` — ${s.description}` : ''}`,
        ...(fields.length > 0 ? [`  input: ${fields.join(', ')}`] : []),
      ].join('\n');
    })
    .join('\n');
}
