/**
 * What a run reaches over the network, checked from outside (TOOL_CONTRACT.md, "What a tool can reach"). The test
 * makes its own "internet" (test/helpers/test-internet.ts): a network namespace with a veth to the host, whose far
 * end holds two TEST-NET-2 addresses (public-looking by design) with servers of the test's own; the host's end is one
 * of the host's own addresses. Beside them the host runs servers on loopback and on every address (0.0.0.0),
 * standing in for the platform's services. Each case asserts, from the servers' side, who was reached: a run under
 * any policy never opens a connection to a host server, however the address is written; it reaches the test's
 * internet by default, only the listed host and port under an allowlist, and nothing with `none`.
 *
 * Runs as root (network namespaces and veths need it; CI is root): skipped otherwise, with the reason.
 */
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { networkInterfaces } from 'node:os';
import { runContainedProcess, runSandbox, type SandboxVerdict } from '../../src/sandbox';
import { parseNetworkPolicy } from '../../src/contract/network-policy';
import { startTestInternet, type TestInternet } from '../helpers/test-internet';
import { describeIf } from '../helpers/skip';

const asRoot = process.getuid?.() === 0;
const PORT = 8080;
const OTHER_PORT = 8081;
// Set once the test's internet is up.
let HOST_ADDR = '';
let PUBLIC_A = '';
let PUBLIC_B = '';
let internet: TestInternet | undefined;

/** Servers on the host: each counts the connections it accepted (what a run must never open). */
const hostServers: { name: string; server: Server; accepted: number; port: number }[] = [];

async function hostServer(name: string, host: string): Promise<void> {
  const entry = { name, server: createServer(), accepted: 0, port: 0 };
  entry.server.on('connection', (socket) => {
    entry.accepted++;
    socket.end('host secret\n');
  });
  entry.server.listen(0, host);
  await once(entry.server, 'listening');
  entry.port = (entry.server.address() as { port: number }).port;
  hostServers.push(entry);
}

beforeAll(async () => {
  if (!asRoot) return;
  // The test's internet: on each public address and port, a server that answers with where it is.
  internet = await startTestInternet(
    (addresses) => `
    const net = require('node:net');
    for (const host of ${JSON.stringify(addresses)}) for (const port of [${PORT}, ${OTHER_PORT}])
      net.createServer((s) => s.end('public ' + host + ':' + port + '\\n')).listen(port, host);
    setTimeout(() => console.log('ready'), 100);`,
  );
  [PUBLIC_A, PUBLIC_B] = internet.addresses;
  HOST_ADDR = internet.hostAddress;
  await hostServer('loopback', '127.0.0.1');
  await hostServer('every address', '0.0.0.0');
  await hostServer('ipv6 loopback', '::1');
});

afterAll(async () => {
  for (const { server } of hostServers) server.close();
  await internet?.stop();
});

/** The host's own addresses (besides the veth's): each a way to a host server listening on every address. */
function ownAddresses(): string[] {
  return Object.values(networkInterfaces())
    .flat()
    .filter((i) => i && i.family === 'IPv4' && !i.internal)
    .map((i) => i!.address);
}

/** Every way an attacker would write "this host" for a port. */
function hostTargets(port: number): string[] {
  const forms = ['127.0.0.1', '127.1', '2130706433', '0x7f000001', '0177.0.0.1', 'localhost', '[::1]', '[::ffff:127.0.0.1]', '0.0.0.0', '10.0.2.2', HOST_ADDR];
  return [...new Set([...forms, ...ownAddresses()])].map((host) => `${host}:${port}`);
}

const PROBE = `
import { z } from 'zod';
import * as net from 'node:net';
const reach = (target: string) => new Promise<string>((done) => {
  const i = target.lastIndexOf(':');
  const host = target.slice(0, i).replace(/^\\[|\\]$/g, '');
  const socket = net.connect({ host, port: Number(target.slice(i + 1)), timeout: 2000 });
  let said = '';
  socket.on('data', (d) => (said += d));
  socket.on('end', () => done(said.trim() || 'connected'));
  socket.on('error', (e: NodeJS.ErrnoException) => done(e.code ?? e.message));
  socket.on('timeout', () => { socket.destroy(); done('timeout'); });
});
export default {
  name: 'egress_probe',
  inputSchema: z.object({ targets: z.array(z.string()) }),
  async execute({ targets }: { targets: string[] }) {
    const out: Record<string, string> = {};
    await Promise.all(targets.map(async (t) => { out[t] = await reach(t); }));
    return out;
  },
};`;

async function probe(policy: string, targets: string[]): Promise<Record<string, string>> {
  const v: SandboxVerdict = await runSandbox({ name: 'egress_probe', source: PROBE, input: { targets }, limits: { network: parseNetworkPolicy(policy) } });
  expect({ status: v.status, error: v.error }).toEqual({ status: 'passed', error: undefined });
  return v.output as Record<string, string>;
}

function accepted(): number {
  return hostServers.reduce((sum, s) => sum + s.accepted, 0);
}

const maybe = describeIf(asRoot, "needs root to make the test's own network namespace and veth");

maybe('a run reaches the internet and nothing of the host', () => {
  test('by default: the public server answers; every host server, however its address is written, is never reached', async () => {
    const before = accepted();
    const targets = [`${PUBLIC_A}:${PORT}`, `${PUBLIC_B}:${OTHER_PORT}`, ...hostServers.flatMap((s) => hostTargets(s.port))];
    const out = await probe('internet', targets);
    expect(out[`${PUBLIC_A}:${PORT}`]).toBe(`public ${PUBLIC_A}:${PORT}`);
    expect(out[`${PUBLIC_B}:${OTHER_PORT}`]).toBe(`public ${PUBLIC_B}:${OTHER_PORT}`);
    expect(accepted()).toBe(before); // the harm: a connection to the platform's side
    for (const t of targets.slice(2)) expect(out[t]).not.toMatch(/host secret/);
  });

  test("a tool's global fetch reaches the public server (undici's WebAssembly fits the run's address-space limit)", async () => {
    const source = `import { z } from 'zod';
export default {
  name: 'fetcher',
  inputSchema: z.object({ url: z.string() }),
  async execute({ url }: { url: string }) { return { body: await (await fetch(url)).text() }; },
};`;
    const v = await runSandbox({ name: 'fetcher', source, input: { url: `http://${PUBLIC_A}:${PORT}/` } });
    // The test's server answers raw text, not HTTP: what matters is that fetch ran and connected, so either a parse
    // error from undici about that text, or the text; never a WebAssembly allocation failure.
    expect(JSON.stringify(v)).not.toMatch(/Wasm memory|WebAssembly/);
    expect(['passed', 'failed']).toContain(v.status);
  });

  test('private, shared, link-local and metadata ranges are unreachable', async () => {
    const targets = ['10.0.0.1:80', '172.16.0.1:80', '192.168.0.1:80', '169.254.169.254:80', '100.64.0.1:80', '198.18.0.1:80'];
    const out = await probe('internet', targets);
    for (const t of targets) expect(out[t]).toMatch(/^(EHOSTUNREACH|ENETUNREACH|ECONNREFUSED)$/);
  });

  test('FORGE_SANDBOX_NETWORK=none: nothing at all, the public server included', async () => {
    const before = accepted();
    const out = await probe('none', [`${PUBLIC_A}:${PORT}`, ...hostTargets(hostServers[1].port)]);
    expect(out[`${PUBLIC_A}:${PORT}`]).toMatch(/^(ENETUNREACH|EHOSTUNREACH)$/);
    expect(accepted()).toBe(before);
  });

  test('an allowlist: the listed host and port only; listing the host itself allows nothing of it', async () => {
    const before = accepted();
    const loop = hostServers[0].port;
    const out = await probe(`${PUBLIC_A}:${PORT},127.0.0.1:${loop},localhost`, [
      `${PUBLIC_A}:${PORT}`,
      `${PUBLIC_A}:${OTHER_PORT}`,
      `${PUBLIC_B}:${PORT}`,
      ...hostTargets(loop),
    ]);
    expect(out[`${PUBLIC_A}:${PORT}`]).toBe(`public ${PUBLIC_A}:${PORT}`);
    expect(out[`${PUBLIC_A}:${OTHER_PORT}`]).not.toMatch(/public/);
    expect(out[`${PUBLIC_B}:${PORT}`]).not.toMatch(/public/);
    expect(accepted()).toBe(before);
  });

  test('a promotion stage command is held the same way', async () => {
    const before = accepted();
    const script = `
      const net = require('node:net');
      const targets = ${JSON.stringify([`${PUBLIC_A}:${PORT}`, ...hostTargets(hostServers[1].port)])};
      let left = targets.length; const out = {};
      for (const t of targets) {
        const i = t.lastIndexOf(':');
        const s = net.connect({ host: t.slice(0, i).replace(/^\\[|\\]$/g, ''), port: Number(t.slice(i + 1)), timeout: 2000 });
        const done = (r) => { if (out[t] === undefined) { out[t] = r; if (--left === 0) console.log(JSON.stringify(out)); } };
        let said = ''; s.on('data', (d) => (said += d)); s.on('end', () => done(said.trim() || 'connected'));
        s.on('error', (e) => done(e.code)); s.on('timeout', () => { s.destroy(); done('timeout'); });
      }`;
    const r = await runContainedProcess({
      argv: [process.execPath, '-e', script],
      cwd: '/',
      env: { PATH: '/usr/bin:/bin' },
      limits: { wallClockMs: 20_000, memoryBytes: 512 * 1024 * 1024, outputBytes: 1024 * 1024 },
    });
    expect({ outcome: r.outcome, error: r.error, exitCode: r.exitCode, stderr: r.stderr.head }).toEqual({
      outcome: 'exited',
      error: undefined,
      exitCode: 0,
      stderr: '',
    });
    const out = JSON.parse((r.stdout.head + r.stdout.tail).trim()) as Record<string, string>;
    expect(out[`${PUBLIC_A}:${PORT}`]).toBe(`public ${PUBLIC_A}:${PORT}`);
    expect(accepted()).toBe(before);
  });

  test('runs started together each get their network, and the host gains no network device', async () => {
    // Each run's tap device is made in its own namespace before slirp4netns opens it (containment.ts): a run whose
    // slirp4netns raced the device's creation would have no network, and one made in the host's namespace would stay.
    // Forty at once: the race, where it was (slirp4netns opening the device while `ip` still held it), lost ~1 run in
    // 100 under load, and this many lost one in two of three tries.
    const devices = () =>
      readFileSync('/proc/net/dev', 'utf8')
        .split('\n')
        .slice(2)
        .map((l) => l.split(':')[0].trim())
        .filter(Boolean)
        .sort();
    const hostDevices = devices();
    const before = accepted();
    const script = `require('node:net').connect({ host: ${JSON.stringify(PUBLIC_A)}, port: ${PORT}, timeout: 5000 })
      .on('data', (d) => process.stdout.write(d)).on('error', (e) => console.log(e.code)).on('timeout', function () { console.log('timeout'); this.destroy(); });`;
    const runs = await Promise.all(
      Array.from({ length: 40 }, () =>
        runContainedProcess({
          argv: [process.execPath, '-e', script],
          cwd: '/',
          env: { PATH: '/usr/bin:/bin' },
          limits: { wallClockMs: 30_000, memoryBytes: 512 * 1024 * 1024, outputBytes: 1024 * 1024 },
        }),
      ),
    );
    expect(runs.map((r) => `${r.outcome} ${r.stdout.head.trim()}${r.stderr.head.trim()}`)).toEqual(Array(40).fill(`exited public ${PUBLIC_A}:${PORT}`));
    expect(devices()).toEqual(hostDevices);
    expect(accepted()).toBe(before);
  });
});
