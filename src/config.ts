import { readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import path from 'node:path';
import { z } from 'zod';
import { parseFaultPoints, type FaultPoint } from './contract/fault-points';
import { MAX_UID_BASE, SANDBOX_CONTAINMENT_MODES, type ContainmentMode } from './contract/limits';
import { TYPECHECK_MODES, type TypecheckMode } from './contract/sandbox-verdict';
import { FORGE_OPERATION_NAMES, TOOL_NAME_PATTERN, TOOL_NAME_RULE } from './contract/tool-name';
import { ConfigError } from './contract/errors';
import { baseUnits, httpUrl } from './contract/inputs';
import { parseNetworkPolicy, type NetworkPolicy } from './contract/network-policy';

// Lives with the other error classes (contract/errors), which the CLI loads without zod; re-exported here.
export { ConfigError };

/**
 * Forge's own configuration, read once from the environment and validated: the only reader of the environment. The
 * sandbox, the registry, the workers and the CLI take their settings from here.
 *
 * The Temporal connection is deliberately not here: clients and workers read it through `@temporalio/envconfig`
 * (TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE, TEMPORAL_API_KEY, profiles), see src/platform/temporal-connection.ts.
 * FORGE_TEMPORAL_PORT / FORGE_UI_PORT only say where `forge up` starts its embedded dev server.
 */
export interface ForgeConfig {
  /** Absolute state directory (dev server SQLite file, PGlite data, venv with the temporal CLI). */
  home: string;
  temporal: {
    /** gRPC port of the embedded dev server that `forge up` starts. */
    port: number;
    /** Web UI port of that dev server. */
    uiPort: number;
  };
  database: { kind: 'postgres'; url: string; schema: string } | { kind: 'pglite'; dataDir: string; schema: string };
  /** Absolute directory of the persisted tool versions that registries load. */
  agentToolsDir: string;
  /**
   * Names agent tools cannot take: Forge's defaults (DEFAULT_BUILTIN_TOOLS) and FORGE_BUILTIN_TOOLS together. A
   * deployment also refuses the built-ins the agent repository's plan declares (src/activities/tool-activities.ts).
   */
  builtinTools: string[];
  /**
   * control: workflows and fast steps; sandbox: tool tests; promote: the first step of a promotion, after which the
   * run's steps go to `<promote>@<host>`, the queue of the worker whose host holds the run's worktree.
   */
  taskQueues: { control: string; sandbox: string; promote: string };
  sandbox: {
    /** How many sandbox activities one worker runs at once. */
    concurrency: number;
    /** Sandbox processes a worker keeps started ahead of demand (FORGE_SANDBOX_SPARES; 0: start each on demand). */
    spares: number;
    /**
     * FORGE_SANDBOX_TEST_HERE (default on): a deployment's test runs where its workflow task runs when that worker has
     * a free slot, and goes to the sandbox queue only when it has none; a re-verification run's tests run there too,
     * waiting for its slots. Off: always the sandbox queue.
     */
    testHere: boolean;
    /**
     * What spares load while they wait (src/sandbox/preload.ts): FORGE_SANDBOX_PRELOAD, packages always preloaded
     * (default zod; `off`: none), and up to FORGE_SANDBOX_PRELOAD_MAX packages in all (default 8), the rest learned
     * from what the tools run lately imported.
     */
    preload: { packages: string[]; max: number };
    /**
     * FORGE_SANDBOX_SNAPSHOT (default on): spares start from a startup snapshot with the configured preloads already
     * loaded (src/sandbox/harness-snapshot.ts), kept per user under the system's temporary directory; off: they load
     * them as files.
     */
    snapshot: boolean;
    /** Field names match `SandboxLimits` in src/sandbox/limits.ts, so this goes to the sandbox as it is. */
    limits: {
      maxTimeoutMs: number;
      memoryMb: number;
      outputBytes: number;
      resultBytes: number;
      sourceBytes: number;
      envPassthrough: string[];
      maxProcesses: number;
      userIdBase: number;
      /** Where per-run private directories go (FORGE_SANDBOX_TMPDIR); unset lets the sandbox pick /dev/shm or tmp. */
      tmpDir?: string;
      /** false: no memory cgroup per run (FORGE_SANDBOX_CGROUP=off); unset: one where the machine allows it. */
      cgroup?: false;
      /** Forces one containment mode (FORGE_SANDBOX_CONTAINMENT); unset takes the strongest the machine allows. */
      containment?: ContainmentMode;
      /**
       * What runs (tool tests, calls, re-verifications, promotion stages) may reach (FORGE_SANDBOX_NETWORK): `internet`
       * (default: public destinations only), `none`, or an allowlist `host[:port],...`. Never the host or its
       * private networks, whatever the setting.
       */
      network: NetworkPolicy;
    };
  };
  migrations: {
    /** `lock_timeout` for agent schema migrations: one that waits longer for a lock fails instead of queueing. */
    lockTimeoutMs: number;
    /** `statement_timeout` for agent schema migrations. */
    statementTimeoutMs: number;
    /**
     * `lock_timeout` of a statement that names a core table (SCHEMA_POLICY.md "Round three"): short, because the
     * application's own queries queue behind a DDL lock that waits. A lock not granted is retried by the workflow.
     */
    coreLockTimeoutMs: number;
    /** How long a migration's transaction may go on running other statements while it holds a core table's lock. */
    coreLockHoldMs: number;
    /** How long the workflow keeps retrying a lock not granted (with backoff) before the migration fails. */
    lockWaitMs: number;
  };
  /** Promotions of changes to the agent's built-in tools (PromoteBuiltinWorkflow). */
  promotion: {
    /** The agent's repository promotions go to when the caller names none (FORGE_BUILTIN_REPO; default $FORGE_HOME/agent-repo). */
    repo: string;
    /** Where run worktrees go (FORGE_PROMOTE_WORKTREE_ROOT); unset: /dev/shm/forge-worktrees where writable, else tmp. */
    worktreeRoot: string | undefined;
    /** Bounds of one stage command, unless the plan gives its own (FORGE_PROMOTE_STAGE_*). */
    stage: { timeoutMs: number; memoryMb: number; outputBytes: number };
    /** How many times a change is verified when the branch keeps moving under it (FORGE_PROMOTE_MAX_ROUNDS). */
    maxRounds: number;
    /** Author and committer of promotion commits (FORGE_PROMOTE_AUTHOR: `Name <email>`). */
    identity: { name: string; email: string };
  };
  /** Fault points the worker kills itself at (FORGE_FAULT_KILL_AT; chaos tests only, empty otherwise). */
  faultKillAt: FaultPoint[];
  /**
   * The worker's Prometheus endpoint (FORGE_METRICS_ADDRESS, `host:port`, default 127.0.0.1:9464; `off`: none).
   * `configured`: the address was set, so not getting it stops the worker; the default only warns (two workers on
   * one machine).
   */
  metrics: { address?: string; configured: boolean };
  /**
   * The worker's read API (FORGE_API_ADDRESS, `host:port`; default `127.0.0.1:0`, loopback on a port the kernel picks;
   * `off`: none), which answers `forge tools` / `forge migrations` without starting a run. Clients find it through
   * the control worker's identity (src/contract/read-api.ts), so they need no setting of their own.
   */
  readApi: {
    address?: string;
    /**
     * FORGE_API_TOKEN: the bearer token the read API asks of every request. Unset: the first worker on a FORGE_HOME
     * makes one and keeps it in `$FORGE_HOME/read-api.token` (0600), which clients on the same host read; set it (on
     * the workers and on clients) for clients that cannot read that file.
     */
    token?: string;
  };
  /** Scheduled re-verification of every active tool (the `forge-reverify` schedule). */
  reverify: {
    /** How often the schedule runs (FORGE_REVERIFY_INTERVAL: `90s`, `30m`, `1h`, `1d` or milliseconds; default 1h). */
    intervalMs: number;
    /**
     * Whether this platform creates or updates the schedule at start (FORGE_REVERIFY_INTERVAL=off: it leaves the
     * schedule alone, e.g. a worker that must not retarget the namespace-wide schedule to its own task queue).
     */
    schedule: boolean;
    /**
     * Tests a run keeps in flight on the sandbox queue (FORGE_REVERIFY_PARALLELISM; default twice
     * FORGE_SANDBOX_CONCURRENCY, which keeps the queue fed while results travel back). 1 makes a run strictly one test
     * after another. A run that tests here (sandbox.testHere) keeps at most the worker's sandbox concurrency.
     */
    parallelism: number;
  };
  /**
   * `forge mcp --http`: the bearer token every request must carry (FORGE_MCP_TOKEN). Unset: the HTTP transport refuses
   * to start (stdio needs none: whoever starts the process already holds it).
   */
  mcp: { token?: string };
  /** x402: paying and selling (README "Payments"). */
  x402: X402Config;
  /**
   * The typecheck stage of a deployment (FORGE_TYPECHECK): `error` (default) rejects a tool with type errors, `warn`
   * deploys it with the errors in the result, `off` skips the checker. `forge sandbox` follows it too.
   */
  typecheck: TypecheckMode;
}

/** What the worker pays and sells with. */
export interface X402Config {
  /**
   * FORGE_X402_DEV=1: the worker runs the local x402 network itself (anvil, the EIP-3009 token, the official
   * facilitator), with a funded throwaway wallet, and allows that token; the RPC, facilitator and key below are then
   * the local network's.
   */
  dev: boolean;
  /** FORGE_X402_RPC_URL: a JSON-RPC endpoint of the chain paid on (reads whether a payment settled). */
  rpcUrl?: string;
  /** FORGE_X402_FACILITATOR_URL: the facilitator sales settle through (a hosted one), and discovery asks. */
  facilitatorUrl?: string;
  /**
   * The wallet's private key (FORGE_X402_WALLET_KEY, or the file FORGE_X402_WALLET_KEY_FILE names), read when a
   * payment is signed. A function, so the key is in no value that could be printed or serialized with the config.
   */
  walletKey: () => `0x${string}` | undefined;
  policy: {
    /** FORGE_X402_MAX_PER_PAYMENT, base units (default 1000000: 1.00 of a 6-decimals token such as USDC). */
    maxPerPayment: bigint;
    /** FORGE_X402_DAILY_BUDGET, base units over any 24 hours (default 10000000). */
    dailyBudget: bigint;
    /** FORGE_X402_ALLOWED_PAYEES: comma list of addresses; empty, any. */
    allowedPayees: string[];
    /** FORGE_X402_ALLOWED_NETWORKS: comma list of CAIP-2 networks; empty, any EVM network. */
    allowedNetworks: string[];
    /** FORGE_X402_ALLOWED_ASSETS: comma list of token addresses; empty, none (with FORGE_X402_DEV, the local token). */
    allowedAssets: string[];
  };
  /** FORGE_X402_SELL_ADDRESS: where the worker serves the tools it sells (default 127.0.0.1:0; `off`: no seller). */
  sellAddress?: string;
  /** FORGE_X402_PAY_TO: the address sales are paid to (default the wallet's own address). */
  payTo?: string;
  /**
   * What sales are priced in: FORGE_X402_SELL_ASSET (a token address) on FORGE_X402_SELL_NETWORK (CAIP-2). With
   * FORGE_X402_DEV, the local token.
   */
  sell: { asset?: string; network?: string };
}

/**
 * Always reserved: the agent's usual built-ins and names an operator would read as the platform's. FORGE_BUILTIN_TOOLS
 * (comma list) adds names to these; it never replaces them, so no setting lets an agent tool be called `shell`.
 */
export const DEFAULT_BUILTIN_TOOLS = [...FORGE_OPERATION_NAMES, 'read_file', 'write_file', 'shell', 'http_fetch'] as const;

const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
const SQL_IDENTIFIER = /^[a-z_][a-z0-9_]{0,62}$/;

const nonEmpty = (v: string | undefined): string | undefined => (v === undefined || v.trim() === '' ? undefined : v.trim());

const commaList = (v: string): string[] =>
  v
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');

/** FORGE_SANDBOX_NETWORK: `internet`, `none` or an allowlist (src/sandbox/network.ts says what each means). */
const networkPolicy = z.string().transform((value, ctx) => {
  try {
    return parseNetworkPolicy(value);
  } catch (err) {
    ctx.addIssue({ code: 'custom', message: (err as Error).message.replace(/^FORGE_SANDBOX_NETWORK: /, '') });
    return z.NEVER;
  }
});

function int(min: number, max: number) {
  return z.string().regex(/^\d+$/, 'must be a whole number').transform(Number).pipe(z.number().int().min(min).max(max));
}

const port = int(1, 65_535);
const metricsAddress = z
  .string()
  .regex(/^(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9.-]+):\d{1,5}$/, 'must be host:port (127.0.0.1:9464, [::1]:9464, 0.0.0.0:9464) or off')
  .refine((v) => Number(v.slice(v.lastIndexOf(':') + 1)) <= 65_535, 'the port must be at most 65535');
const positive = int(1, Number.MAX_SAFE_INTEGER);
const toolNames = z
  .string()
  .transform(commaList)
  .pipe(z.array(z.string().regex(TOOL_NAME_PATTERN, `every name must follow the tool-name rule: ${TOOL_NAME_RULE}`)));
const packageNames = z
  .string()
  .transform(commaList)
  .pipe(z.array(z.string().regex(/^(@[a-z0-9._-]+\/)?[a-z0-9._-]+$/, 'every entry must be an npm package name (zod, @scope/pkg)')));
const envNames = z
  .string()
  .transform(commaList)
  .pipe(z.array(z.string().regex(ENV_NAME, 'every entry must be an environment variable name')));
const faultPoints = z.string().transform((v, ctx) => {
  try {
    return parseFaultPoints(v);
  } catch (err) {
    ctx.addIssue({ code: 'custom', message: (err as Error).message });
    return z.NEVER;
  }
});
const identity = z
  .string()
  .regex(/^[^<>]+<[^<>\s]+>$/, 'must read `Name <email>`')
  .transform((v) => {
    const [name, email] = v.slice(0, -1).split('<');
    return { name: name.trim(), email };
  });
const INTERVAL_UNITS_MS = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;
const interval = z
  .string()
  .regex(/^\d+(ms|s|m|h|d)?$/, 'must be a duration such as 90s, 30m, 1h, 1d, or a number of milliseconds')
  .transform((v) => {
    const [, n, unit] = /^(\d+)(ms|s|m|h|d)?$/.exec(v)!;
    return Number(n) * INTERVAL_UNITS_MS[(unit ?? 'ms') as keyof typeof INTERVAL_UNITS_MS];
  })
  .pipe(
    z
      .number()
      .int()
      .min(1_000, 'must be at least 1s')
      .max(366 * 86_400_000, 'must be at most 366d'),
  );
const bearerToken = z
  .string()
  .regex(/^[\x21-\x7e]+$/, 'must be printable ASCII without spaces (it travels in an Authorization header)')
  .min(16, 'must be at least 16 characters (e.g. `openssl rand -hex 32`)');
const databaseUrl = z.string().refine((v) => /^postgres(ql)?:\/\//.test(v) && URL.canParse(v), {
  message: 'must be a postgres:// or postgresql:// URL',
});

/** Every environment variable `loadConfig` reads (tests check deployment files against it). */
export const CONFIG_ENV_NAMES = [
  'FORGE_HOME',
  'FORGE_TEMPORAL_PORT',
  'FORGE_UI_PORT',
  'DATABASE_URL',
  'FORGE_AGENT_TOOLS_DIR',
  'FORGE_BUILTIN_TOOLS',
  'FORGE_TASK_QUEUE_CONTROL',
  'FORGE_TASK_QUEUE_SANDBOX',
  'FORGE_SANDBOX_CONCURRENCY',
  'FORGE_SANDBOX_SPARES',
  'FORGE_SANDBOX_TEST_HERE',
  'FORGE_SANDBOX_PRELOAD',
  'FORGE_SANDBOX_PRELOAD_MAX',
  'FORGE_SANDBOX_SNAPSHOT',
  'FORGE_SANDBOX_MAX_TIMEOUT_MS',
  'FORGE_SANDBOX_MEMORY_MB',
  'FORGE_SANDBOX_OUTPUT_BYTES',
  'FORGE_SANDBOX_RESULT_BYTES',
  'FORGE_SANDBOX_SOURCE_BYTES',
  'FORGE_SANDBOX_ENV_PASSTHROUGH',
  'FORGE_SANDBOX_TMPDIR',
  'FORGE_SANDBOX_CGROUP',
  'FORGE_SANDBOX_CONTAINMENT',
  'FORGE_SANDBOX_NETWORK',
  'FORGE_SANDBOX_MAX_PROCESSES',
  'FORGE_SANDBOX_UID_BASE',
  'FORGE_MIGRATION_LOCK_TIMEOUT_MS',
  'FORGE_MIGRATION_STATEMENT_TIMEOUT_MS',
  'FORGE_MIGRATION_CORE_LOCK_TIMEOUT_MS',
  'FORGE_MIGRATION_CORE_LOCK_HOLD_MS',
  'FORGE_MIGRATION_LOCK_WAIT_MS',
  'FORGE_SCHEMA',
  'FORGE_TASK_QUEUE_PROMOTE',
  'FORGE_BUILTIN_REPO',
  'FORGE_PROMOTE_WORKTREE_ROOT',
  'FORGE_PROMOTE_STAGE_TIMEOUT_MS',
  'FORGE_PROMOTE_STAGE_MEMORY_MB',
  'FORGE_PROMOTE_STAGE_OUTPUT_BYTES',
  'FORGE_PROMOTE_MAX_ROUNDS',
  'FORGE_PROMOTE_AUTHOR',
  'FORGE_FAULT_KILL_AT',
  'FORGE_METRICS_ADDRESS',
  'FORGE_API_ADDRESS',
  'FORGE_API_TOKEN',
  'FORGE_REVERIFY_INTERVAL',
  'FORGE_REVERIFY_PARALLELISM',
  'FORGE_MCP_TOKEN',
  'FORGE_X402_DEV',
  'FORGE_X402_RPC_URL',
  'FORGE_X402_FACILITATOR_URL',
  'FORGE_X402_WALLET_KEY',
  'FORGE_X402_WALLET_KEY_FILE',
  'FORGE_X402_MAX_PER_PAYMENT',
  'FORGE_X402_DAILY_BUDGET',
  'FORGE_X402_ALLOWED_PAYEES',
  'FORGE_X402_ALLOWED_NETWORKS',
  'FORGE_X402_ALLOWED_ASSETS',
  'FORGE_X402_SELL_ADDRESS',
  'FORGE_X402_PAY_TO',
  'FORGE_X402_SELL_ASSET',
  'FORGE_X402_SELL_NETWORK',
  'FORGE_TYPECHECK',
] as const;
type ConfigEnvName = (typeof CONFIG_ENV_NAMES)[number];

/** Variables whose values are secrets: never echoed in an error, never passed to a tool (FORGE_SANDBOX_ENV_PASSTHROUGH). */
const SECRET_ENV_NAMES: readonly string[] = [
  'DATABASE_URL',
  'FORGE_API_TOKEN',
  'FORGE_MCP_TOKEN',
  'FORGE_X402_WALLET_KEY',
  'FORGE_X402_WALLET_KEY_FILE',
  'TEMPORAL_API_KEY',
  'TEMPORAL_TLS_CLIENT_KEY_DATA',
  'TEMPORAL_TLS_CLIENT_KEY_PATH',
];

/** FORGE_METRICS_ADDRESS: loopback by default, so metrics leave the machine only where an operator says so. */
function readMetrics(env: NodeJS.ProcessEnv): ForgeConfig['metrics'] {
  const raw = nonEmpty(env.FORGE_METRICS_ADDRESS);
  if (raw?.toLowerCase() === 'off') return { configured: true };
  return { address: read(env, 'FORGE_METRICS_ADDRESS', metricsAddress, '127.0.0.1:9464'), configured: raw !== undefined };
}

/** Parses one variable; unset or blank means `fallback` (itself parsed, so defaults obey the same rules). */
function read<S extends z.ZodType<unknown, string>>(env: NodeJS.ProcessEnv, name: ConfigEnvName, schema: S, fallback: string): z.output<S> {
  return parse(name, schema, nonEmpty(env[name]) ?? fallback);
}

function readOptional<S extends z.ZodType<unknown, string>>(env: NodeJS.ProcessEnv, name: ConfigEnvName, schema: S): z.output<S> | undefined {
  const raw = nonEmpty(env[name]);
  return raw === undefined ? undefined : parse(name, schema, raw);
}

function parse<S extends z.ZodType<unknown, string>>(name: ConfigEnvName, schema: S, raw: string): z.output<S> {
  const result = schema.safeParse(raw);
  if (result.success) return result.data;
  const why = result.error.issues.map((i) => i.message).join('; ');
  const shown = SECRET_ENV_NAMES.includes(name) ? '(value hidden: it may hold a password)' : JSON.stringify(raw);
  throw new ConfigError(`${name}=${shown} is invalid: ${why}`, name, { cause: result.error });
}

/**
 * Reads and validates Forge's configuration. Relative paths resolve against the current directory.
 * @throws ConfigError naming the variable whose value is unusable.
 */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): ForgeConfig {
  const home = path.resolve(read(env, 'FORGE_HOME', z.string(), '.forge'));
  const temporalPort = read(env, 'FORGE_TEMPORAL_PORT', port, '7233');
  const uiPort = read(env, 'FORGE_UI_PORT', port, '8233');
  if (temporalPort === uiPort) {
    throw new ConfigError(`FORGE_UI_PORT=${uiPort} is invalid: it equals FORGE_TEMPORAL_PORT`, 'FORGE_UI_PORT');
  }
  const url = readOptional(env, 'DATABASE_URL', databaseUrl);
  const schema = read(env, 'FORGE_SCHEMA', z.string().regex(SQL_IDENTIFIER, 'must be a lowercase SQL identifier (^[a-z_][a-z0-9_]{0,62}$)'), 'public');
  const sandboxConcurrency = read(env, 'FORGE_SANDBOX_CONCURRENCY', int(1, 1024), String(availableParallelism()));
  return {
    home,
    temporal: { port: temporalPort, uiPort },
    database: url !== undefined ? { kind: 'postgres', url, schema } : { kind: 'pglite', dataDir: path.join(home, 'pgdata'), schema },
    agentToolsDir: path.resolve(read(env, 'FORGE_AGENT_TOOLS_DIR', z.string(), './agent-tools')),
    builtinTools: [...new Set([...DEFAULT_BUILTIN_TOOLS, ...read(env, 'FORGE_BUILTIN_TOOLS', toolNames, '')])],
    taskQueues: {
      control: read(env, 'FORGE_TASK_QUEUE_CONTROL', z.string(), 'forge-control'),
      sandbox: read(env, 'FORGE_TASK_QUEUE_SANDBOX', z.string(), 'forge-sandbox'),
      promote: read(env, 'FORGE_TASK_QUEUE_PROMOTE', z.string(), 'forge-promote'),
    },
    sandbox: {
      concurrency: sandboxConcurrency,
      // One spare per slot by default, so that as many runs as may run at once all find a started process.
      spares: read(env, 'FORGE_SANDBOX_SPARES', int(0, 1024), nonEmpty(env.FORGE_SANDBOX_CONCURRENCY) ?? String(availableParallelism())),
      testHere: read(env, 'FORGE_SANDBOX_TEST_HERE', z.enum(['on', 'off']), 'on') === 'on',
      preload: {
        packages: nonEmpty(env.FORGE_SANDBOX_PRELOAD)?.toLowerCase() === 'off' ? [] : read(env, 'FORGE_SANDBOX_PRELOAD', packageNames, 'zod'),
        max: read(env, 'FORGE_SANDBOX_PRELOAD_MAX', int(0, 64), '8'),
      },
      snapshot: read(env, 'FORGE_SANDBOX_SNAPSHOT', z.enum(['on', 'off']), 'on') === 'on',
      limits: {
        maxTimeoutMs: read(env, 'FORGE_SANDBOX_MAX_TIMEOUT_MS', positive, '30000'),
        memoryMb: read(env, 'FORGE_SANDBOX_MEMORY_MB', int(16, 1_048_576), '512'),
        outputBytes: read(env, 'FORGE_SANDBOX_OUTPUT_BYTES', positive, String(1024 * 1024)),
        resultBytes: read(env, 'FORGE_SANDBOX_RESULT_BYTES', positive, String(4 * 1024 * 1024)),
        sourceBytes: read(env, 'FORGE_SANDBOX_SOURCE_BYTES', positive, String(10 * 1024 * 1024)),
        envPassthrough: read(env, 'FORGE_SANDBOX_ENV_PASSTHROUGH', envNames, ''),
        maxProcesses: read(env, 'FORGE_SANDBOX_MAX_PROCESSES', int(8, 1_048_576), '512'),
        userIdBase: read(env, 'FORGE_SANDBOX_UID_BASE', int(0, MAX_UID_BASE), '2100000000'),
        tmpDir: readOptional(
          env,
          'FORGE_SANDBOX_TMPDIR',
          z.string().transform((p) => path.resolve(p)),
        ),
        cgroup: read(env, 'FORGE_SANDBOX_CGROUP', z.enum(['on', 'off']), 'on') === 'off' ? false : undefined,
        containment: readOptional(env, 'FORGE_SANDBOX_CONTAINMENT', z.enum(SANDBOX_CONTAINMENT_MODES)),
        network: read(env, 'FORGE_SANDBOX_NETWORK', networkPolicy, 'internet'),
      },
    },
    migrations: {
      lockTimeoutMs: read(env, 'FORGE_MIGRATION_LOCK_TIMEOUT_MS', positive, '5000'),
      statementTimeoutMs: read(env, 'FORGE_MIGRATION_STATEMENT_TIMEOUT_MS', positive, '60000'),
      coreLockTimeoutMs: read(env, 'FORGE_MIGRATION_CORE_LOCK_TIMEOUT_MS', positive, '1000'),
      coreLockHoldMs: read(env, 'FORGE_MIGRATION_CORE_LOCK_HOLD_MS', positive, '2000'),
      lockWaitMs: read(env, 'FORGE_MIGRATION_LOCK_WAIT_MS', positive, '600000'),
    },
    promotion: {
      repo: path.resolve(readOptional(env, 'FORGE_BUILTIN_REPO', z.string()) ?? path.join(home, 'agent-repo')),
      worktreeRoot: readOptional(
        env,
        'FORGE_PROMOTE_WORKTREE_ROOT',
        z.string().transform((p) => path.resolve(p)),
      ),
      stage: {
        timeoutMs: read(env, 'FORGE_PROMOTE_STAGE_TIMEOUT_MS', int(1_000, 24 * 3_600_000), '600000'),
        memoryMb: read(env, 'FORGE_PROMOTE_STAGE_MEMORY_MB', int(64, 1_048_576), '4096'),
        outputBytes: read(env, 'FORGE_PROMOTE_STAGE_OUTPUT_BYTES', int(1024, 1024 ** 3), String(16 * 1024 * 1024)),
      },
      maxRounds: read(env, 'FORGE_PROMOTE_MAX_ROUNDS', int(1, 20), '3'),
      identity: read(env, 'FORGE_PROMOTE_AUTHOR', identity, 'Forge <forge@localhost>'),
    },
    faultKillAt: read(env, 'FORGE_FAULT_KILL_AT', faultPoints, ''),
    metrics: readMetrics(env),
    readApi: {
      ...(nonEmpty(env.FORGE_API_ADDRESS)?.toLowerCase() === 'off' ? {} : { address: read(env, 'FORGE_API_ADDRESS', metricsAddress, '127.0.0.1:0') }),
      token: readOptional(env, 'FORGE_API_TOKEN', bearerToken),
    },
    reverify: {
      ...(nonEmpty(env.FORGE_REVERIFY_INTERVAL)?.toLowerCase() === 'off'
        ? { intervalMs: read({}, 'FORGE_REVERIFY_INTERVAL', interval, '1h'), schedule: false }
        : { intervalMs: read(env, 'FORGE_REVERIFY_INTERVAL', interval, '1h'), schedule: true }),
      parallelism: read(env, 'FORGE_REVERIFY_PARALLELISM', int(1, 4096), String(sandboxConcurrency * 2)),
    },
    mcp: { token: readOptional(env, 'FORGE_MCP_TOKEN', bearerToken) },
    x402: readX402(env),
    typecheck: read(env, 'FORGE_TYPECHECK', z.enum(TYPECHECK_MODES), 'error'),
  };
}

const baseUnitsAmount = baseUnits.transform(BigInt);
const evmAddress = /^0x[0-9a-fA-F]{40}$/;
const addresses = z
  .string()
  .transform(commaList)
  .pipe(z.array(z.string().regex(evmAddress, 'every entry must be a 0x address of 40 hex digits')))
  .transform((list) => list.map((a) => a.toLowerCase()));
const networks = z
  .string()
  .transform(commaList)
  .pipe(z.array(z.string().regex(/^eip155:\d+$/, 'every entry must be an EVM network in CAIP-2 form, e.g. eip155:8453')));
const privateKey = /^0x[0-9a-fA-F]{64}$/;

/** The x402 settings; the wallet key is validated now (a bad key is a start-up error) but only kept in a closure. */
function readX402(env: NodeJS.ProcessEnv): X402Config {
  const keyFile = readOptional(
    env,
    'FORGE_X402_WALLET_KEY_FILE',
    z.string().transform((p) => path.resolve(p)),
  );
  const inline = nonEmpty(env.FORGE_X402_WALLET_KEY);
  if (inline !== undefined && keyFile !== undefined) {
    throw new ConfigError('FORGE_X402_WALLET_KEY and FORGE_X402_WALLET_KEY_FILE are both set: set one', 'FORGE_X402_WALLET_KEY');
  }
  let key: `0x${string}` | undefined;
  if (inline !== undefined) {
    if (!privateKey.test(inline))
      throw new ConfigError('FORGE_X402_WALLET_KEY is invalid: must be 0x and 64 hex digits (value hidden)', 'FORGE_X402_WALLET_KEY');
    key = inline as `0x${string}`;
  } else if (keyFile !== undefined) {
    let text: string;
    try {
      text = readFileSync(keyFile, 'utf8').trim();
    } catch (err) {
      throw new ConfigError(`FORGE_X402_WALLET_KEY_FILE=${JSON.stringify(keyFile)} cannot be read: ${(err as Error).message}`, 'FORGE_X402_WALLET_KEY_FILE');
    }
    if (!privateKey.test(text)) {
      throw new ConfigError(
        `FORGE_X402_WALLET_KEY_FILE=${JSON.stringify(keyFile)} does not hold a key: it must be 0x and 64 hex digits (contents hidden)`,
        'FORGE_X402_WALLET_KEY_FILE',
      );
    }
    key = text as `0x${string}`;
  }
  const passthrough = parse('FORGE_SANDBOX_ENV_PASSTHROUGH', envNames, nonEmpty(env.FORGE_SANDBOX_ENV_PASSTHROUGH) ?? '');
  const leak = passthrough.find((name) => SECRET_ENV_NAMES.includes(name));
  if (leak)
    throw new ConfigError(`FORGE_SANDBOX_ENV_PASSTHROUGH may not pass ${leak} to tools: it is a secret of the worker's`, 'FORGE_SANDBOX_ENV_PASSTHROUGH');
  const sell = nonEmpty(env.FORGE_X402_SELL_ADDRESS);
  const payTo = readOptional(env, 'FORGE_X402_PAY_TO', z.string().regex(evmAddress, 'must be a 0x address of 40 hex digits'));
  return {
    dev: read(env, 'FORGE_X402_DEV', z.enum(['0', '1', 'true', 'false']), '0') === '1' || env.FORGE_X402_DEV === 'true',
    rpcUrl: readOptional(env, 'FORGE_X402_RPC_URL', httpUrl),
    facilitatorUrl: readOptional(env, 'FORGE_X402_FACILITATOR_URL', httpUrl),
    walletKey: () => key,
    policy: {
      maxPerPayment: read(env, 'FORGE_X402_MAX_PER_PAYMENT', baseUnitsAmount, '1000000'),
      dailyBudget: read(env, 'FORGE_X402_DAILY_BUDGET', baseUnitsAmount, '10000000'),
      allowedPayees: read(env, 'FORGE_X402_ALLOWED_PAYEES', addresses, ''),
      allowedNetworks: read(env, 'FORGE_X402_ALLOWED_NETWORKS', networks, ''),
      allowedAssets: read(env, 'FORGE_X402_ALLOWED_ASSETS', addresses, ''),
    },
    sellAddress: sell?.toLowerCase() === 'off' ? undefined : read(env, 'FORGE_X402_SELL_ADDRESS', metricsAddress, '127.0.0.1:0'),
    payTo,
    sell: {
      asset: readOptional(env, 'FORGE_X402_SELL_ASSET', z.string().regex(evmAddress, 'must be a 0x token address of 40 hex digits')),
      network: readOptional(env, 'FORGE_X402_SELL_NETWORK', z.string().regex(/^eip155:\d+$/, 'must be an EVM network in CAIP-2 form, e.g. eip155:8453')),
    },
  };
}
