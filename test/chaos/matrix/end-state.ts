import { existsSync, readdirSync, readFileSync, readlinkSync, statSync } from 'node:fs';
import path from 'node:path';
import { sql } from 'drizzle-orm';
import { openPglite } from '../../../src/db/pglite';
import { readActiveIndex } from '../../../src/registry/tool-files';

/**
 * Everything a run can change, read after the workers stopped, with what legitimately differs between two runs of
 * the same input (ids, times, the run's own workflow and run IDs) replaced by stable placeholders. Two end states
 * compare equal exactly when the same side effects happened the same number of times.
 */
export interface EndState {
  toolVersions: string[];
  activeTools: string[];
  versionCounters: string[];
  events: string[];
  migrations: string[];
  agentColumns: string[];
  /** Every file under agent-tools/ with its size (v<N>.json holds a write time, so only its size is compared). */
  agentToolsFiles: string[];
  /**
   * active.json's tools (name → version). Not its generation: that follows the events' ids, and a PostgreSQL sequence
   * skips up to 32 values after a crash (tried: a re-verification cell ended at 45 against 14), while the events
   * themselves, compared above, happened once each.
   */
  activeIndex: Record<string, unknown>;
  /** Re-verification's record: one row per test of a run (no durations, no row ids), and what it decided. */
  reverifyResults: string[];
  /** The tools re-verification moved (quarantined or degraded), with the reason it recorded. */
  quarantine: string[];
}

/** The placeholders: the run under test's workflow ID and run ID, so a baseline and a cell compare alike. */
export interface RunIds {
  workflowId: string;
  runId?: string;
}

export async function readEndState(home: string, run: RunIds): Promise<EndState> {
  const scrub = (text: string) => {
    let out = text.split(run.workflowId).join('<run>');
    if (run.runId) out = out.split(run.runId).join('<run-id>');
    // Run IDs of the setup's runs differ from one platform to the next; which run did what is still compared.
    return out.replace(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g, '<setup-run-id>');
  };
  const database = await openPglite(path.join(home, 'pgdata'), 'public');
  try {
    const rows = async (text: string) =>
      ((await database.db.execute(sql.raw(text))) as unknown as { rows: Record<string, unknown>[] }).rows.map((r) => scrub(JSON.stringify(r)));
    const agentTools = path.join(home, 'agent-tools');
    return {
      toolVersions: await rows(
        `SELECT name, version, content_hash, description, verdict->>'status' AS verdict, workflow_id FROM tool_versions ORDER BY name, version`,
      ),
      activeTools: await rows('SELECT name, version FROM active_tools ORDER BY name'),
      versionCounters: await rows('SELECT name, last_version FROM tool_version_counters ORDER BY name'),
      events: await rows('SELECT kind, subject, detail, workflow_id FROM events ORDER BY id'),
      migrations: await rows('SELECT name, checksum, workflow_id, run_id FROM forge_migrations ORDER BY name'),
      agentColumns: await rows(
        `SELECT table_name, column_name, data_type FROM information_schema.columns
          WHERE table_schema = 'public' AND table_name LIKE 'agent\\_%' ORDER BY table_name, ordinal_position`,
      ),
      agentToolsFiles: listFiles(agentTools),
      reverifyResults: await rows(
        'SELECT run_key, name, version, attempt, role, verdict, action, error, workflow_id FROM reverify_results ORDER BY run_key, name, version, attempt',
      ),
      quarantine: await rows('SELECT name, state, failed_version, active_version, reason, run_key, workflow_id FROM tool_quarantine ORDER BY name'),
      // active.json with the lines active.log adds to it (docs/tool-contract.md, "agent-tools/ on disk").
      activeIndex: (await readActiveIndex(agentTools))?.tools ?? {},
    };
  } finally {
    await database.close();
  }
}

function listFiles(dir: string, prefix = ''): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { withFileTypes: true })
    .flatMap((entry) => {
      const rel = path.join(prefix, entry.name);
      if (entry.isDirectory()) return listFiles(path.join(dir, entry.name), rel);
      // The pointers' files are compared by what they say (activeIndex): a run that a kill sent through a worker's
      // restart folds the log into active.json where an uninterrupted one appended a line, the same pointers either way.
      if (rel === 'active.json') return [rel];
      if (rel === 'active.log') return [];
      return [`${rel} (${statSync(path.join(dir, entry.name)).size} bytes)`];
    })
    .sort();
}

/** The first difference between two end states (or two scenarios' own states), in words; undefined when they agree. */
export function differenceOf<T extends object>(expected: T, actual: T): string | undefined {
  for (const key of Object.keys(expected) as (keyof T & string)[]) {
    const a = JSON.stringify(expected[key], null, 1);
    const b = JSON.stringify(actual[key], null, 1);
    if (a !== b) return `${key} differs: uninterrupted ${a.replace(/\s+/g, ' ')} / after the fault ${b.replace(/\s+/g, ' ')}`;
  }
  return undefined;
}

/** Processes still running with their working directory under `dir` (a sandbox run that outlived its worker). */
export function processesUnder(dir: string): string[] {
  const found: string[] = [];
  for (const pid of readdirSync('/proc').filter((p) => /^\d+$/.test(p))) {
    try {
      const cwd = readlinkSync(`/proc/${pid}/cwd`);
      if (cwd.startsWith(dir)) found.push(`${pid} (${readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' ').trim().slice(0, 120)})`);
    } catch {
      // Gone meanwhile, or not ours to read.
    }
  }
  return found;
}

/** Entries left in a directory that should be empty (sandbox run directories, temp files). */
export function leftoversIn(dir: string): string[] {
  return existsSync(dir) ? readdirSync(dir) : [];
}

/** A process as /proc shows it; its start time (clock ticks since boot) tells it from a later one with its pid. */
export interface LiveProcess {
  pid: number;
  start: string;
  cmdline: string;
}

/** Processes (not zombies) whose working directory is under `dir`, e.g. a promotion stage's tree in its worktree. */
export function processTreeUnder(dir: string): LiveProcess[] {
  const found: LiveProcess[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'latin1');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (fields[0] === 'Z' || fields[0] === 'X') continue;
      if (!readlinkSync(`/proc/${entry}/cwd`).startsWith(dir)) continue;
      found.push({ pid: Number(entry), start: fields[19], cmdline: readFileSync(`/proc/${entry}/cmdline`, 'latin1').split('\0').join(' ').trim() });
    } catch {
      // Gone meanwhile.
    }
  }
  return found;
}

/** Whether the process `pid`, started at `start` (clock ticks since boot), still runs (zombies count as gone). */
export function stillRunning(p: { pid: number; start: string }): boolean {
  try {
    const stat = readFileSync(`/proc/${p.pid}/stat`, 'latin1');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return fields[19] === p.start && fields[0] !== 'Z' && fields[0] !== 'X';
  } catch {
    return false;
  }
}
