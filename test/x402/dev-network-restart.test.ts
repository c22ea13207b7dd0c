import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { findFreePort } from '../../src/process/free-port';
import { EIP3009_TOKEN } from '../../src/x402/contracts/artifacts';
import { DEV_WALLET_FUNDS } from '../../src/x402/runtime';
import { viem, viemAccounts, type Address } from '../../src/x402/viem';
import { processesMarkedWith, until } from '../helpers/processes';
import { cliEnv, FORGE_BIN, ROOT, runForgeJson, TOOL_FIXTURES } from '../cli/run-cli';

/**
 * Issue 26: FORGE_X402_DEV keeps its chain across restarts of `forge up` on the same FORGE_HOME, a clean SIGTERM and a
 * SIGKILL alike: the same token at the same address, the same wallet with the balance it had (read from the chain),
 * the payee's income still there, and the tool `forge sell` offered before is still sold and payable, without running
 * `forge sell` again.
 */
const PRICE = 50_000n;
const payTo = viemAccounts.privateKeyToAccount(viemAccounts.generatePrivateKey()).address;
const home = mkdtempSync(path.join(existsSync('/dev/shm') ? '/dev/shm' : tmpdir(), 'forge-x402-restart-'));
let up: { child: ChildProcess; stdout: () => string; stderr: () => string; env: NodeJS.ProcessEnv } | undefined;

/** `forge up` on the test's FORGE_HOME, resolved once it is up. */
async function startUp(): Promise<NonNullable<typeof up>> {
  const port = await findFreePort();
  const child = spawn(process.execPath, [FORGE_BIN, 'up'], {
    env: cliEnv({
      FORGE_HOME: home,
      FORGE_AGENT_TOOLS_DIR: path.join(home, 'agent-tools'),
      FORGE_TEMPORAL_PORT: String(port),
      FORGE_UI_PORT: String(await findFreePort()),
      FORGE_METRICS_ADDRESS: 'off',
      FORGE_X402_DEV: '1',
      FORGE_X402_PAY_TO: payTo,
      FORGE_REVERIFY_INTERVAL: 'off',
    }),
    cwd: ROOT,
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (c: Buffer) => (stdout += c.toString()));
  child.stderr!.on('data', (c: Buffer) => (stderr += c.toString()));
  const started = {
    child,
    stdout: () => stdout,
    stderr: () => stderr,
    env: cliEnv({ TEMPORAL_ADDRESS: `127.0.0.1:${port}`, FORGE_HOME: home, FORGE_AGENT_TOOLS_DIR: path.join(home, 'agent-tools') }),
  };
  const ok = await until(() => stdout.includes('Forge is up.') || child.exitCode !== null, 90_000);
  if (!ok || child.exitCode !== null) throw new Error(`forge up did not come up:\n${stdout}\n${stderr}`);
  return started;
}

/** Signals `forge up` and waits until it and everything it started (the dev server, anvil) have exited by themselves. */
async function stopUp(signal: 'SIGTERM' | 'SIGKILL'): Promise<void> {
  if (!up) return;
  const { child } = up;
  up = undefined;
  if (child.exitCode === null && child.signalCode === null) {
    const exited = new Promise((resolve) => child.once('exit', resolve));
    process.kill(child.pid!, signal);
    await exited;
  }
  // No sweep first: anvil, told by its parent's death (SIGTERM), writes the chain before it exits.
  const gone = await until(() => processesMarkedWith(home).length === 0, 20_000);
  for (const p of processesMarkedWith(home)) process.kill(p.pid, 'SIGKILL');
  expect(gone).toBe(true);
}

/** What the worker said of its dev network: the RPC URL, the token, the wallet and what it holds. */
function devNetworkOf(log: string) {
  const network = /x402 dev network at (\S+) \(chain 31337\); token fUSD at (0x[0-9a-fA-F]{40})/.exec(log);
  const wallet = /x402 wallet (0x[0-9a-fA-F]{40}) holds (\d+) base units/.exec(log);
  if (!network || !wallet) throw new Error(`no dev network in the log:\n${log}`);
  return { rpcUrl: network[1], token: network[2] as Address, wallet: wallet[1] as Address, holds: BigInt(wallet[2]) };
}

async function balanceOf(rpcUrl: string, token: Address, who: Address): Promise<bigint> {
  const client = viem.createPublicClient({ transport: viem.http(rpcUrl) });
  return client.readContract({ address: token, abi: EIP3009_TOKEN.abi, functionName: 'balanceOf', args: [who] });
}

/** The sold tool's URL as discovery lists it now (the seller's port is the kernel's pick at each start). */
async function soldUrl(env: NodeJS.ProcessEnv): Promise<string> {
  const listed = await runForgeJson(['services', '--query', 'celsius'], { env });
  expect(listed.code).toBe(0);
  const services = listed.json.services as Array<{ url: string; price: string; payTo: string }>;
  expect(services).toEqual([expect.objectContaining({ price: String(PRICE), payTo })]);
  return services[0].url;
}

async function pay(env: NodeJS.ProcessEnv, url: string): Promise<void> {
  const paid = await runForgeJson(['pay', url, '--method', 'POST', '--header', 'content-type: application/json', '--body', '{"celsius":100}'], { env });
  expect(paid.json).toMatchObject({ status: 'paid', httpStatus: 200, amount: String(PRICE) });
  expect(paid.code).toBe(0);
}

afterAll(async () => {
  await stopUp('SIGTERM').catch(() => undefined);
  for (const p of processesMarkedWith(home)) process.kill(p.pid, 'SIGKILL');
  rmSync(home, { recursive: true, force: true });
}, 60_000);

let first: ReturnType<typeof devNetworkOf>;

test('first start: a new chain kept under FORGE_HOME, privately; a tool deployed, sold and bought', async () => {
  up = await startUp();
  first = devNetworkOf(up.stderr());
  expect(first.holds).toBe(DEV_WALLET_FUNDS);
  const kept = path.join(home, 'x402-dev');
  expect(statSync(kept).mode & 0o777).toBe(0o700);
  expect(statSync(path.join(kept, 'network.json')).mode & 0o777).toBe(0o600);
  expect(statSync(path.join(home, 'x402-discovery.token')).mode & 0o777).toBe(0o600);

  const deployed = await runForgeJson(['deploy', path.join(TOOL_FIXTURES, 'celsius_to_fahrenheit.ts'), '--test-input', '{"celsius":100}'], { env: up.env });
  expect(deployed.json).toMatchObject({ status: 'active' });
  const sold = await runForgeJson(['sell', 'celsius_to_fahrenheit', '--price', String(PRICE)], { env: up.env });
  expect(sold.json).toMatchObject({ status: 'offered', asset: first.token, payTo });
  await pay(up.env, await soldUrl(up.env));
  expect(await balanceOf(first.rpcUrl, first.token, first.wallet)).toBe(DEV_WALLET_FUNDS - PRICE);
  expect(await balanceOf(first.rpcUrl, first.token, payTo)).toBe(PRICE);
}, 180_000);

for (const [signal, paidBefore] of [
  ['SIGTERM', 1n],
  ['SIGKILL', 2n],
] as const) {
  test(`after ${signal}: the same token, wallet and balances; the offer is still sold and payable without forge sell`, async () => {
    await stopUp(signal);
    up = await startUp();
    const now = devNetworkOf(up.stderr());
    expect(now.token).toBe(first.token);
    expect(now.wallet).toBe(first.wallet);
    expect(now.holds).toBe(DEV_WALLET_FUNDS - paidBefore * PRICE);
    expect(up.stderr()).toContain('the kept chain in');
    expect(await balanceOf(now.rpcUrl, now.token, payTo)).toBe(paidBefore * PRICE);

    await pay(up.env, await soldUrl(up.env));
    expect(await balanceOf(now.rpcUrl, now.token, now.wallet)).toBe(DEV_WALLET_FUNDS - (paidBefore + 1n) * PRICE);
    expect(await balanceOf(now.rpcUrl, now.token, payTo)).toBe((paidBefore + 1n) * PRICE);
  }, 180_000);
}
