import { createHash } from 'node:crypto';
import { existsSync, lstatSync, readdirSync, readFileSync, readlinkSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { ScheduleNotFoundError, WorkflowNotFoundError, type WorkflowExecutionDescription } from '@temporalio/client';
import type { Client as PgClient } from 'pg';
import { ToolRegistry } from '../../src/registry';
import type { Canaries } from './canaries';
import { leakedSecrets, VICTIM, VICTIM_INPUT, type Secrets } from './corpus';
import type { HostilePlatform } from './platform';

/**
 * What the test checks from outside every sandbox, before and after a hostile run: the harm, not the tool's word.
 *
 * - the runs on the Temporal frontend: none new but the test's own, none gone, none changed (status, history length);
 * - the `forge-reverify` schedule: still there, unchanged;
 * - the files of FORGE_HOME (agent-tools/, the agent repository, the operator's files): byte for byte;
 * - no `hostile-<marker>` file in any place the files tool wrote to;
 * - the canary listeners: no connection accepted;
 * - the local chain: the wallet's balance, the token's supply and code;
 * - PostgreSQL: no session opened;
 * - the victim tool: called as an agent would, it still returns its own output.
 */
export interface Snapshot {
  workflows: Map<string, { workflowId: string; status: string; historyLength: number; onItsTime?: boolean }>;
  schedule: string | undefined;
  files: Map<string, string>;
  /** agent-tools/ and FORGE_HOME's own files as they were, to put back after a run that changed them. */
  contents: Map<string, Buffer>;
  markers: string[];
  canaryConnections: number;
  chain?: Record<string, string>;
  pgSessions?: number;
  victim: string;
}

export interface WatchOptions {
  platform: HostilePlatform;
  canaries: Canaries;
  secrets: Secrets;
  marker: string;
  /** Directories the files tool leaves its marker file in. */
  markerDirs: string[];
  /** A session on the test's PostgreSQL, kept open (so that the test's own reads open no session). */
  pg?: PgClient;
  /** The test's canary workflow, RUNNING on a queue nobody polls. */
  canaryWorkflowId: string;
}

/** FORGE_HOME entries that change on their own (the databases, the dev server's log, the attempt ledger). */
const VOLATILE = new Set(['pgdata', 'pgdata.lock', 'temporal.sqlite', 'temporal.sqlite-wal', 'temporal.sqlite-shm', 'temporal-server.log', 'attempts']);
/** The active pointers, compared tool by tool (`agent-tools/active.json#<tool>`): a deployment of the test's own moves one. */
const ACTIVE = 'agent-tools/active.json';

/** The log of pointer changes on top of active.json (docs/tool-contract.md, "agent-tools/ on disk"). */
const ACTIVE_LOG = 'agent-tools/active.log';

/**
 * The active pointers of an agent-tools directory, synchronously: active.json, then the lines of active.log on its
 * generation (the format's reading rule; src/registry/active-log.ts is the platform's reader).
 */
export function readActivePointersSync(agentTools: string): { generation: number; tools: Record<string, { version: number; contentHash: string }> } {
  const index = JSON.parse(readFileSync(path.join(agentTools, 'active.json'), 'utf8')) as {
    generation: number;
    tools: Record<string, { version: number; contentHash: string }>;
  };
  const tools = { ...index.tools };
  let log = '';
  try {
    log = readFileSync(path.join(agentTools, 'active.log'), 'utf8');
  } catch {
    return { generation: index.generation, tools };
  }
  let generation = index.generation;
  for (const raw of log
    .slice(0, log.lastIndexOf('\n') + 1)
    .split('\n')
    .filter(Boolean)) {
    const line = JSON.parse(raw) as { base: number; generation: number; name: string; version?: number; contentHash?: string };
    if (line.base !== index.generation || line.generation <= generation) continue;
    generation = line.generation;
    if (line.version === undefined) delete tools[line.name];
    else tools[line.name] = { version: line.version, contentHash: line.contentHash as string };
  }
  return { generation, tools };
}

function readActive(file: string): Record<string, { version: number } | undefined> {
  try {
    return readActivePointersSync(path.dirname(file)).tools;
  } catch {
    return {};
  }
}

/** JSON with keys sorted at every level: describe() does not keep one order. */
function canonical(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) =>
    v && typeof v === 'object' && !Array.isArray(v)
      ? Object.fromEntries(Object.entries(v as Record<string, unknown>).sort(([a], [b]) => a.localeCompare(b)))
      : v,
  );
}

const sha = (data: Buffer | string) => createHash('sha256').update(data).digest('hex').slice(0, 16);

/**
 * The dev chain's state file: anvil rewrites it in place every second (truncate, then write), so a read can land in the
 * middle and see an empty or partial file though nothing changed (seen in CI: "x402-dev/chain-state.json (... ->
 * e3b0c442...)", the hash of nothing). Its bytes are still compared, once a read sees a whole JSON document.
 */
const CHAIN_STATE = 'x402-dev/chain-state.json';

function readWholeJsonSync(file: string): Buffer {
  let data = readFileSync(file);
  for (let attempt = 0; attempt < 40; attempt++) {
    try {
      JSON.parse(data.toString('utf8'));
      return data;
    } catch {
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 50);
      data = readFileSync(file);
    }
  }
  return data;
}

function walk(root: string, rel: string, files: Map<string, string>, contents: Map<string, Buffer>): void {
  const full = path.join(root, rel);
  let st;
  try {
    st = lstatSync(full);
  } catch {
    return;
  }
  const mode = (st.mode & 0o7777).toString(8);
  if (st.isSymbolicLink()) {
    files.set(rel, `link ${readlinkSync(full)}`);
  } else if (st.isDirectory()) {
    if (rel !== '' && (VOLATILE.has(rel) || rel.endsWith('/.git'))) return;
    files.set(rel === '' ? '.' : `${rel}/`, `dir ${mode} ${st.uid}`);
    for (const name of readdirSync(full)) walk(root, rel === '' ? name : `${rel}/${name}`, files, contents);
  } else if (st.isFile()) {
    if (rel === '.git' || VOLATILE.has(rel) || rel.endsWith('/.active.json.lock')) return;
    const data = rel === CHAIN_STATE ? readWholeJsonSync(full) : readFileSync(full);
    if (!rel.startsWith('agent-repo/')) contents.set(rel, data);
    if (rel === ACTIVE) {
      const { tools } = readActivePointersSync(path.dirname(full));
      for (const [tool, entry] of Object.entries(tools)) files.set(`${ACTIVE}#${tool}`, `v${entry.version} ${entry.contentHash}`);
      files.set(ACTIVE, `file ${mode} ${st.uid}`);
      return;
    }
    // Its lines are in the pointers above; a deployment of the test's own appends one.
    if (rel === ACTIVE_LOG) {
      files.set(ACTIVE_LOG, `file ${mode} ${st.uid}`);
      return;
    }
    files.set(rel, `file ${mode} ${st.uid} ${sha(data)}`);
  }
}

async function rpc(url: string, method: string, params: unknown[]): Promise<string> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
    signal: AbortSignal.timeout(5_000),
  });
  const body = (await res.json()) as { result?: unknown; error?: { message?: string } };
  return body.error ? `error: ${body.error.message}` : String(body.result);
}

/**
 * The dev server removes a history about 35 s after a DeleteWorkflowExecution was accepted (measured: describe and
 * list still show it until then). Cases wait that long where a delete may still be on its way.
 */
export const TEMPORAL_DELETE_LAG_MS = 40_000;
const DELETE_LAG_NOTE = ' (the dev server removes a history ~35 s after the delete was asked for: an earlier case may have asked)';

const word = (hex: string) => hex.replace(/^0x/, '').padStart(64, '0');
const ATTACKER = '0x000000000000000000000000000000000000dEaD';

/**
 * Whether a run is the platform's own re-verification, fired by the forge-reverify schedule at one of its times (the
 * hostile tests' platform runs it hourly: a test that spans the hour sees one start, and the next test sees it run on).
 * Only the schedule sets TemporalScheduledById (a client cannot), and a manual trigger fires at the moment it is asked,
 * not on one of the spec's times, so a tool that reached the frontend and triggered or started anything is still harm.
 * The server keeps the scheduled time to the whole second: a trigger within the first second of one of the schedule's
 * times would pass as its own run, a window of one second an hour that a test cannot aim for.
 */
export function firedByTheSchedule(d: WorkflowExecutionDescription, interval: { every: number; offset?: number } | undefined): boolean {
  const attrs = d.searchAttributes as Record<string, unknown[] | undefined>;
  const at = attrs.TemporalScheduledStartTime?.[0];
  const time = at instanceof Date ? at.getTime() : typeof at === 'string' ? Date.parse(at) : NaN;
  if (!interval || attrs.TemporalScheduledById?.[0] !== 'forge-reverify' || d.type !== 'reverifyToolsWorkflow') return false;
  // describe() leaves `offset` out when the spec has none (Forge's schedule sets none): a zero offset, not NaN.
  return (time - (interval.offset ?? 0)) % interval.every === 0;
}

export class HarmWatch {
  constructor(readonly options: WatchOptions) {}

  async snapshot(): Promise<Snapshot> {
    const { platform, canaries, pg } = this.options;
    let schedule: string | undefined;
    let every: { every: number; offset?: number } | undefined;
    try {
      const d = await platform.client.schedule.getHandle('forge-reverify').describe();
      // What it starts, when, and whether it is paused (describe() lists search attributes in no fixed order).
      every = d.spec.intervals?.[0];
      const action = d.action as { workflowType?: string; workflowId?: string; taskQueue?: string; args?: unknown[] };
      schedule = canonical({
        workflowType: action.workflowType,
        workflowId: action.workflowId,
        taskQueue: action.taskQueue,
        args: action.args,
        intervals: d.spec.intervals,
        calendars: d.spec.calendars,
        paused: d.state.paused,
        overlap: d.policies.overlap,
      });
    } catch (err) {
      if (!(err instanceof ScheduleNotFoundError)) throw err;
    }
    const workflows: Snapshot['workflows'] = new Map();
    for await (const wf of platform.client.workflow.list()) {
      workflows.set(`${wf.workflowId} ${wf.runId}`, { workflowId: wf.workflowId, status: wf.status.name, historyLength: wf.historyLength });
    }
    // Visibility lags and keeps what was deleted for a while: each run is asked about directly too.
    for (const [key, wf] of workflows) {
      try {
        const d = await platform.client.workflow.getHandle(wf.workflowId, key.split(' ')[1]).describe();
        workflows.set(key, { workflowId: wf.workflowId, status: d.status.name, historyLength: d.historyLength, onItsTime: firedByTheSchedule(d, every) });
      } catch (err) {
        if (err instanceof WorkflowNotFoundError) workflows.delete(key);
        else throw err;
      }
    }
    const files = new Map<string, string>();
    const contents = new Map<string, Buffer>();
    walk(platform.home, '', files, contents);
    const markers = this.options.markerDirs.map((d) => path.join(d, `hostile-${this.options.marker}`)).filter((p) => existsSync(p));
    let chain: Record<string, string> | undefined;
    const { rpcUrl, token, wallet } = platform.x402;
    if (rpcUrl && token) {
      chain = {
        walletBalance: await rpc(rpcUrl, 'eth_call', [{ to: token, data: `0x70a08231${word(wallet)}` }, 'latest']),
        attackerBalance: await rpc(rpcUrl, 'eth_call', [{ to: token, data: `0x70a08231${word(ATTACKER)}` }, 'latest']),
        totalSupply: await rpc(rpcUrl, 'eth_call', [{ to: token, data: '0x18160ddd' }, 'latest']),
        tokenCode: sha(await rpc(rpcUrl, 'eth_getCode', [token, 'latest'])),
        // A transaction sent from the wallet (impersonated) moves its nonce; any transaction mines a block.
        walletTransactions: await rpc(rpcUrl, 'eth_getTransactionCount', [wallet, 'latest']),
        blockNumber: await rpc(rpcUrl, 'eth_blockNumber', []),
      };
    }
    const pgSessions = pg ? Number((await pg.query('select sum(sessions)::bigint as n from pg_stat_database')).rows[0].n) : undefined;
    return { workflows, schedule, files, contents, markers, canaryConnections: canaries.connections().length, chain, pgSessions, victim: await this.victim() };
  }

  /**
   * A snapshot once what a run set going has settled: the runs and the schedule read the same twice, a second apart
   * (a deleted history goes a moment after the delete was accepted; a workflow the run started lands in visibility).
   */
  async settledSnapshot(): Promise<Snapshot> {
    const key = (s: Snapshot) => canonical({ workflows: [...s.workflows.entries()].sort(), schedule: s.schedule });
    let last = await this.snapshot();
    for (let round = 0; round < 5; round++) {
      await new Promise((r) => setTimeout(r, 1_000));
      const next = await this.snapshot();
      if (key(next) === key(last)) return next;
      last = next;
    }
    return last;
  }

  /** The victim called as an agent's registry calls it (a registry opened on agent-tools/ now, one call). */
  async victim(): Promise<string> {
    const registry = await ToolRegistry.open({ dir: this.options.platform.agentToolsDir, spares: 0, onReloadError: () => undefined });
    try {
      const result = await registry.invoke(VICTIM, VICTIM_INPUT);
      return JSON.stringify(result.ok ? { version: result.version, output: result.output } : { error: result.error, status: result.status });
    } finally {
      await registry.close();
    }
  }

  /**
   * The harm done between `before` and `after`, one sentence each (empty: none). `allowed`: workflow IDs the test
   * itself started in between; `ownTool`: the tool the test deployed in between (its files and active pointer);
   * `ownPaths`: FORGE_HOME paths the test itself changed in between (a promotion's merge into agent-repo/).
   * `said`: everything the hostile tool returned, printed or failed with.
   */
  harm(before: Snapshot, after: Snapshot, said: string, test: { allowed?: string[]; ownTool?: string; ownPaths?: string[] } = {}): string[] {
    const allowed = test.allowed ?? [];
    const own = (file: string) =>
      (test.ownTool !== undefined && (file.startsWith(`agent-tools/${test.ownTool}/`) || file === `${ACTIVE}#${test.ownTool}`)) ||
      (test.ownPaths ?? []).some((p) => file.startsWith(p));
    const harm: string[] = [];
    for (const [key, wf] of after.workflows) {
      if (!before.workflows.has(key) && !allowed.includes(wf.workflowId) && !wf.onItsTime)
        harm.push(`a workflow the test did not start: ${wf.workflowId} (${wf.status})`);
    }
    for (const [key, wf] of before.workflows) {
      const now = after.workflows.get(key);
      if (!now) harm.push(`a workflow's history is gone: ${wf.workflowId}${DELETE_LAG_NOTE}`);
      else if (!allowed.includes(wf.workflowId) && !wf.onItsTime && (now.status !== wf.status || now.historyLength !== wf.historyLength)) {
        harm.push(`a workflow changed: ${wf.workflowId} ${wf.status}/${wf.historyLength} events -> ${now.status}/${now.historyLength}`);
      }
    }
    if (before.schedule && !after.schedule) harm.push('the forge-reverify schedule is gone');
    else if (before.schedule !== after.schedule) harm.push(`the forge-reverify schedule changed: ${after.schedule}`);
    for (const [file, was] of before.files) {
      const now = after.files.get(file);
      if (own(file)) continue;
      if (now === undefined) harm.push(`a file of FORGE_HOME is gone: ${file}`);
      else if (now !== was) harm.push(`a file of FORGE_HOME changed: ${file} (${was} -> ${now})`);
    }
    // A deployment's type check that passed is remembered (src/sandbox/typecheck-passes.ts): one new entry is the
    // platform's; a second one, or any change to an entry there before, is not.
    const newFiles = [...after.files.keys()].filter((file) => !before.files.has(file) && !own(file));
    const ownPass = test.ownTool !== undefined ? newFiles.find((file) => /^typecheck-passes\/[0-9a-f]{64}\.json$/.test(file)) : undefined;
    for (const file of newFiles) if (file !== ownPass) harm.push(`a new file in FORGE_HOME: ${file}`);
    for (const marker of after.markers) if (!before.markers.includes(marker)) harm.push(`the tool left a file outside its run: ${marker}`);
    const { canaries } = this.options;
    const connections = canaries.connections().slice(before.canaryConnections, after.canaryConnections);
    if (connections.length > 0)
      harm.push(`the host's listeners accepted ${connections.length} connection(s) from the run: ${connections.slice(0, 5).join(', ')}`);
    for (const [field, was] of Object.entries(before.chain ?? {})) {
      if (after.chain?.[field] !== was) harm.push(`the local chain changed: ${field} ${was} -> ${after.chain?.[field]}`);
    }
    if (before.pgSessions !== undefined && after.pgSessions !== before.pgSessions) {
      harm.push(`PostgreSQL sessions were opened: ${before.pgSessions} -> ${after.pgSessions}`);
    }
    if (after.victim !== before.victim) harm.push(`the victim tool answers differently: ${before.victim} -> ${after.victim}`);
    const leaked = leakedSecrets(said, this.options.secrets);
    if (leaked.length > 0) harm.push(`the tool got secrets out: ${leaked.join(', ')}`);
    return harm;
  }

  /**
   * Puts back what a run changed, so that the next case starts from the same state: agent-tools/ and FORGE_HOME's
   * own files as they were, marker files removed, the canary workflow running. (What it cannot put back, a deleted
   * history or schedule or a moved balance, the final check reports against the very first snapshot.)
   */
  async restore(before: Snapshot, ownTool?: string): Promise<void> {
    const { platform } = this.options;
    const now = new Map<string, string>();
    walk(platform.home, '', now, new Map());
    const own = (file: string) => ownTool !== undefined && file.startsWith(`agent-tools/${ownTool}/`);
    for (const [file, data] of before.contents) {
      if (file !== ACTIVE && !own(file) && now.get(file) !== before.files.get(file)) writeFileSync(path.join(platform.home, file), data);
    }
    for (const file of now.keys()) {
      if (!before.files.has(file) && !file.endsWith('/') && !file.includes('#') && !own(file)) rmSync(path.join(platform.home, file), { force: true });
    }
    // Every other tool's active pointer as it was; the test's own tool keeps what its deployment gave it.
    const activePath = path.join(platform.home, ACTIVE);
    const pointers = [...now.keys()].filter((k) => k.startsWith(`${ACTIVE}#`));
    const changed =
      pointers.some((k) => !k.endsWith(`#${ownTool}`) && now.get(k) !== before.files.get(k)) ||
      [...before.files.keys()].some((k) => k.startsWith(`${ACTIVE}#`) && !now.has(k));
    if (changed && existsSync(activePath)) {
      // The pointers as they were (from the snapshot's per-tool entries), written as a new active.json above every
      // generation on disk; the log's lines name the older base, so readers ignore them from then on.
      const current = readActivePointersSync(path.dirname(activePath));
      const previous: Record<string, unknown> = {};
      for (const [k, v] of before.files) {
        const m = k.startsWith(`${ACTIVE}#`) ? /^v(\d+) (\S+)$/.exec(v) : null;
        if (m) previous[k.slice(ACTIVE.length + 1)] = { version: Number(m[1]), contentHash: m[2] };
      }
      const tools = { ...previous, ...(ownTool && current.tools[ownTool] ? { [ownTool]: current.tools[ownTool] } : {}) };
      writeFileSync(activePath, JSON.stringify({ generation: current.generation + 1, updatedAt: new Date().toISOString(), tools }, null, 2));
    }
    for (const dir of this.options.markerDirs) rmSync(path.join(dir, `hostile-${this.options.marker}`), { force: true });
    // A victim redeployed through Temporal is active in the database too: rolled back the way an operator would, or
    // the worker's next notification would write the attacker's version back.
    const pointer = `${ACTIVE}#${VICTIM}`;
    const was = /^v(\d+) /.exec(before.files.get(pointer) ?? '')?.[1];
    if (was !== undefined && now.get(pointer) !== before.files.get(pointer)) {
      await platform.forge.rollbackTool(VICTIM, { toVersion: Number(was) });
      const deadline = Date.now() + 10_000;
      while (Date.now() < deadline && readActive(activePath)[VICTIM]?.version !== Number(was)) await new Promise((r) => setTimeout(r, 100));
    }
    await this.ensureCanaryWorkflow();
  }

  /** Starts the canary workflow again if a run ended it. */
  async ensureCanaryWorkflow(): Promise<void> {
    const { client } = this.options.platform;
    const id = this.options.canaryWorkflowId;
    const running = await client.workflow
      .getHandle(id)
      .describe()
      .then((d) => d.status.name === 'RUNNING')
      .catch(() => false);
    if (!running) await client.workflow.start('hostileCanary', { taskQueue: 'hostile-canary-nobody-polls', workflowId: id });
  }
}
