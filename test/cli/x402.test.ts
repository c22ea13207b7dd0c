import path from 'node:path';
import { viemAccounts } from '../../src/x402/viem';
import { startForgeUp, type ForgeUp } from './forge-up';
import { runForge, runForgeJson, TOOL_FIXTURES } from './run-cli';

/**
 * README's "A first sale and a first payment", as a newcomer runs it: `forge up` with FORGE_X402_DEV=1 (the local
 * chain, token, facilitator and a funded wallet, all inside the worker), then only the CLI: deploy a tool, sell it,
 * find it, buy it, read the P&L, and be refused over a limit. The wallet key is given, so the test can look for it in
 * everything printed.
 */
const PRICE = '50000';
let up: ForgeUp;
let env: NodeJS.ProcessEnv;
const key = viemAccounts.generatePrivateKey();

beforeAll(async () => {
  up = await startForgeUp('forge-cli-x402-', { FORGE_X402_DEV: '1', FORGE_X402_WALLET_KEY: key, FORGE_REVERIFY_INTERVAL: 'off' });
  env = up.clientEnv;
}, 90_000);

afterAll(() => up?.stop());

let url: string;

test('deploy, then forge sell: the tool is sold at a URL of the worker, in the local token', async () => {
  const deployed = await runForgeJson(['deploy', path.join(TOOL_FIXTURES, 'celsius_to_fahrenheit.ts'), '--test-input', '{"celsius":100}'], { env });
  expect(deployed).toMatchObject({ code: 0, json: { status: 'active' } });
  const sold = await runForgeJson(['sell', 'celsius_to_fahrenheit', '--price', PRICE], { env });
  expect(sold.code).toBe(0);
  expect(sold.json).toMatchObject({ status: 'offered', tool: 'celsius_to_fahrenheit', price: PRICE, network: 'eip155:31337' });
  url = sold.json.url as string;
  expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/tools\/celsius_to_fahrenheit$/);
  const text = await runForge(['sell', 'no_such_tool', '--price', PRICE], { env });
  expect(text.code).toBe(1);
  expect(text.stdout).toContain('deploy it first');
  expect((await runForge(['sell', 'celsius_to_fahrenheit', '--price', '0.05'], { env })).code).toBe(2);
});

test('forge sell --price in money as x402 writes it: $0.05 is 50000 base units of the 6-decimals token, and says so; $0.0000001 is bad input', async () => {
  const money = await runForgeJson(['sell', 'celsius_to_fahrenheit', '--price', '$0.05'], { env });
  expect(money).toMatchObject({ code: 0, json: { status: 'offered', price: PRICE, priceGiven: '$0.05', decimals: 6, priceInTokens: '0.05', url } });
  const text = await runForge(['sell', 'celsius_to_fahrenheit', '--price', '$0.05'], { env });
  expect(text.code).toBe(0);
  expect(text.stdout).toContain(`${PRICE} base units of `);
  expect(text.stdout).toContain('($0.05 at 6 decimals)');

  const fine = await runForgeJson(['sell', 'celsius_to_fahrenheit', '--price', '$0.0000001'], { env });
  expect(fine).toMatchObject({ code: 2, json: { status: 'refused', problem: 'price' } });
  expect(fine.json.reason).toContain("finer than the sale asset's 6 decimals allow: its smallest step is $0.000001");
  const ambiguous = await runForge(['sell', 'celsius_to_fahrenheit', '--price', '0.05'], { env });
  expect(ambiguous.stderr).toContain('forge: --price: the price "0.05" is ambiguous: write $0.05');
  const listed = await runForgeJson(['services', '--query', 'Celsius'], { env });
  expect(listed.json.services).toEqual([expect.objectContaining({ url, price: PRICE })]);
});

test('forge services lists it with its input schema', async () => {
  const listed = await runForgeJson(['services', '--query', 'Celsius'], { env });
  expect(listed.code).toBe(0);
  const services = listed.json.services as Array<Record<string, unknown>>;
  expect(services).toEqual([expect.objectContaining({ url, price: PRICE })]);
  expect(JSON.stringify(services[0].inputSchema)).toContain('celsius');
  const text = await runForge(['services'], { env });
  expect(text.stdout).toContain(`POST ${url}`);
});

test('forge pay buys it: paid, the output, a transaction; over --max refused with exit 1 and nothing paid', async () => {
  const paid = await runForgeJson(['pay', url, '--method', 'POST', '--header', 'content-type: application/json', '--body', '{"celsius":100}'], { env });
  expect(paid.code).toBe(0);
  expect(paid.json).toMatchObject({
    status: 'paid',
    httpStatus: 200,
    amount: PRICE,
    network: 'eip155:31337',
    txHash: expect.stringMatching(/^0x[0-9a-f]{64}$/),
  });
  expect(JSON.parse(paid.json.body as string)).toEqual({ output: { fahrenheit: 212 } });
  expect(paid.json.workflowId).toMatch(/^pay\//);

  const refused = await runForgeJson(['pay', url, '--method', 'POST', '--body', '{"celsius":1}', '--max', '49999'], { env });
  expect(refused.code).toBe(1);
  expect(refused.json).toMatchObject({ status: 'refused', limit: 'maxPerPayment', amount: PRICE });
  const text = await runForge(['pay', url, '--method', 'POST', '--body', '{"celsius":1}', '--max', '1'], { env });
  expect(text.code).toBe(1);
  expect(text.stdout).toContain('Nothing was signed or paid');
  expect(text.stdout).toContain("--max 1 set this payment's maximum");
});

test('forge pnl: the sale as income, the purchase as spend, net zero; by day too', async () => {
  const byTool = await runForgeJson(['pnl'], { env });
  expect(byTool.code).toBe(0);
  expect(byTool.json.totals).toEqual({ income: PRICE, spend: PRICE, net: '0' });
  expect(byTool.json.rows).toEqual(expect.arrayContaining([expect.objectContaining({ key: 'celsius_to_fahrenheit', income: PRICE })]));
  const byDay = await runForgeJson(['pnl', '--by', 'day'], { env });
  expect(byDay.json.rows).toEqual([expect.objectContaining({ key: new Date().toISOString().slice(0, 10), net: '0' })]);
  const text = await runForge(['pnl'], { env });
  expect(text.stdout).toMatch(/^total\s+50000\s+50000\s+0$/m);
});

test('the wallet key is in nothing forge up printed; its address is', () => {
  const printed = up.stderr();
  expect(printed).toContain(viemAccounts.privateKeyToAccount(key).address);
  expect(printed.toLowerCase()).not.toContain(key.slice(2).toLowerCase());
});
