import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { ROOT } from '../cli/run-cli';
import { hostAddresses, PRIVATE_ADDRESSES, type Canaries } from './canaries';
import type { HostilePlatform } from './platform';

/** The hostile tools (test/hostile/tools/<kind>.ts), each deployed as `hostile_<kind>`. */
export const HOSTILE_KINDS = ['scan', 'temporal', 'files', 'http', 'env'] as const;
export type HostileKind = (typeof HOSTILE_KINDS)[number];

const TOOLS_DIR = path.join(__dirname, 'tools');

/** A hostile tool's source, as an agent would submit it. */
export function hostileSource(kind: HostileKind): string {
  return readFileSync(path.join(TOOLS_DIR, `${kind}.ts`), 'utf8');
}

export const hostileName = (kind: HostileKind) => `hostile_${kind}`;

/** The victim: an ordinary tool whose source holds a secret, and whose output says it is still itself. */
export const VICTIM = 'victim_echo';
export const VICTIM_INPUT = { n: 7 };
export const VICTIM_OUTPUT = { victim: 'intact', n: 7 };

export function victimSource(secret: string): string {
  return `import { z } from 'zod';

/** Not for anyone else's eyes: ${secret} */
const CREDENTIAL = '${secret}';

export default {
  name: '${VICTIM}',
  description: 'Echoes n back; its source holds a credential.',
  inputSchema: z.object({ n: z.number() }),
  async execute({ n }: { n: number }) {
    return { victim: 'intact', n, credentialLength: CREDENTIAL.length };
  },
};
`;
}

/** What a hijacked victim module runs instead (the files tool writes it over the victim's compiled module). */
const PWNED_VICTIM_MODULE = `import { z } from 'zod';
export default {
  name: '${VICTIM}',
  description: 'pwned',
  inputSchema: z.object({}).passthrough(),
  async execute() { return { pwned: true }; },
};
`;

/** Secrets the test plants; none may appear in anything a hostile tool returns, prints or fails with. */
export interface Secrets {
  /** In the victim's source (agent-tools/, the database, its deploy history). */
  source: string;
  /** In an operator's file in FORGE_HOME. */
  home: string;
  /** In a stand-in for another run's private directory. */
  run: string;
  /** In the worker's environment. */
  env: string;
  /** The x402 wallet's private key (the worker's environment; hex, no 0x). */
  walletKey: string;
  /** The read API's bearer token (the worker's and the clients' environment). */
  apiToken: string;
}

export function newSecret(label: string): string {
  return `HOSTILE_SECRET_${label}_${randomBytes(8).toString('hex')}`;
}

/** The labels of the secrets that `text` holds (case-insensitive). */
export function leakedSecrets(text: string, secrets: Secrets): string[] {
  const lower = text.toLowerCase();
  return Object.entries(secrets)
    .filter(([, value]) => lower.includes(String(value).toLowerCase()))
    .map(([label]) => label);
}

/** The `HOSTILE-REPORT {...}` lines a tool printed on stderr (a deployment's test shows stderr's tail). */
export function reportsIn(text: string | undefined): Record<string, unknown>[] {
  const reports: Record<string, unknown>[] = [];
  for (const line of (text ?? '').split('\n')) {
    const at = line.indexOf('HOSTILE-REPORT ');
    if (at < 0) continue;
    const json = line.slice(at + 'HOSTILE-REPORT '.length);
    try {
      reports.push(JSON.parse(json) as Record<string, unknown>);
    } catch {
      reports.push({ unparsed: json });
    }
  }
  return reports;
}

/**
 * What a hostile tool says it reached of the platform and the host, from its report or its output (the same fields):
 * a listener that accepted its connection, a frontend it connected to, an HTTP service or a database that answered.
 * Secondary to the harm checked from outside, but the contract's own words: a tool that tries the host gets a
 * connection error, never a platform service.
 */
export function claimedReach(said: unknown): string[] {
  const claims: string[] = [];
  const visit = (value: unknown) => {
    if (Array.isArray(value)) return value.forEach(visit);
    if (!value || typeof value !== 'object') return;
    const o = value as Record<string, unknown>;
    if (Array.isArray(o.reached)) claims.push(...o.reached.map((r) => `connected to ${String(r)}`));
    if (typeof o.connectedTo === 'string') claims.push(`a Temporal frontend at ${o.connectedTo}`);
    if (Array.isArray(o.answered)) claims.push(...o.answered.map((a) => `answered: ${String(a)}`));
    if (o.postgres && typeof o.postgres === 'object') {
      for (const [where, what] of Object.entries(o.postgres))
        if (String(what).startsWith('answered')) claims.push(`PostgreSQL ${where} ${String(what).slice(0, 60)}`);
    }
    if (o.sockets && typeof o.sockets === 'object') {
      for (const [where, what] of Object.entries(o.sockets)) if (what === 'connected') claims.push(`connected to ${where}`);
    }
  };
  visit(said);
  return claims;
}

/** Where the files tool leaves `hostile-<marker>` files (all must stay free of them). */
export function writeTargets(platform: HostilePlatform): string[] {
  return [
    platform.home,
    platform.agentToolsDir,
    path.join(platform.agentToolsDir, VICTIM),
    platform.agentRepo,
    ROOT,
    path.join(ROOT, 'node_modules'),
    path.join(ROOT, 'node_modules', 'zod'),
    '/tmp',
    '/var/tmp',
    '/dev/shm',
  ];
}

/** Everything the attacker is told, per tool: the addresses, ports and paths the test knows of. */
export interface AttackContext {
  platform: HostilePlatform;
  canaries: Canaries;
  /** The test's PostgreSQL (a private cluster with CI's passwords). */
  postgres?: { host: string; port: number };
  /** A stand-in for another run's private directory, named as runs' are. */
  otherRunDir: string;
  /** The operator's file in FORGE_HOME that holds a secret. */
  homeSecretFile: string;
  marker: string;
  /** Workflow IDs the temporal tool leaves running (its own run, which it wants to finish). */
  ownPrefixes: string[];
}

const portOf = (url: string | undefined) => (url ? Number(new URL(url).port) : undefined);

/** The ports of every platform service the test knows of, and its canaries'. */
function knownPorts(ctx: AttackContext): number[] {
  const { urls, temporalPort } = ctx.platform;
  const ports = [
    temporalPort,
    ...[urls.ui, urls.metrics, urls.readApi, urls.seller, urls.anvil, urls.facilitator].map(portOf),
    ctx.postgres?.port,
    5432,
    ...ctx.canaries.list(),
  ];
  return [...new Set(ports.filter((p): p is number => typeof p === 'number' && p > 0))];
}

/** `http://127.0.0.1:P` written the ways an address filter might not recognise as loopback. */
function spelledUrls(url: string): string[] {
  const { port } = new URL(url);
  return [url, ...['2130706433', '0x7f000001', '[::ffff:127.0.0.1]', 'localhost', '127.1', '[::1]'].map((h) => `http://${h}:${port}`)];
}

/** The attack input of each tool. */
export function attackInput(kind: HostileKind, ctx: AttackContext): Record<string, unknown> {
  const { platform } = ctx;
  switch (kind) {
    case 'scan':
      return { ports: knownPorts(ctx), hostAddresses: hostAddresses(), privateAddresses: PRIVATE_ADDRESSES, privatePorts: [80, 443] };
    case 'temporal': {
      const port = platform.temporalPort;
      return {
        addresses: [
          `127.0.0.1:${port}`,
          `localhost:${port}`,
          `[::ffff:127.0.0.1]:${port}`,
          ...hostAddresses().map((a) => (a.includes(':') ? `[${a}]:${port}` : `${a}:${port}`)),
        ],
        namespace: 'default',
        victim: VICTIM,
        ownPrefixes: ctx.ownPrefixes,
      };
    }
    case 'files':
      return {
        read: [ctx.homeSecretFile, platform.agentToolsDir, platform.home],
        write: writeTargets(platform),
        overwrite: [
          { path: path.join(platform.agentToolsDir, VICTIM, 'v1.mjs'), content: PWNED_VICTIM_MODULE },
          { path: ctx.homeSecretFile, content: 'overwritten by a hostile tool\n' },
        ],
        runRoots: ['/dev/shm', '/tmp'],
        runTag: path.basename(ctx.otherRunDir).replace(/^forge-sbx-/, ''),
        marker: ctx.marker,
      };
    case 'http': {
      const { urls } = platform;
      return {
        readApiUrls: urls.readApi ? spelledUrls(urls.readApi) : [],
        otherUrls: [urls.metrics ? `${urls.metrics}/metrics` : undefined, urls.ui, urls.seller, urls.facilitator].filter((u): u is string => !!u),
        anvilUrls: urls.anvil ? [urls.anvil] : [],
        wallet: platform.x402.wallet,
        token: platform.x402.token,
        postgres: ctx.postgres ? [ctx.postgres] : [],
        pgSocketDirs: ['/var/run/postgresql'],
        socketSearchDirs: [platform.home],
        attacker: '0x000000000000000000000000000000000000dEaD',
      };
    }
    case 'env':
      return { platformHint: platform.home };
  }
}
