/**
 * What the differential test (differential.test.ts) records of the database and the server before and after each
 * case, and how two records are compared. The connections and the order of events live in harness.ts; this module
 * is the data and the diffs.
 */
import { execFile } from 'node:child_process';
import { existsSync, lstatSync, readdirSync, readFileSync, type Stats } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';

const execFileAsync = promisify(execFile);

/** The parts of the world a case is compared on; each failure names one. */
export type Facet =
  | 'catalog'
  | 'pg_dump'
  | 'reach'
  | 'rows'
  | 'sequences'
  | 'session'
  | 'advisory locks'
  | 'large objects'
  | 'other sessions'
  | 'files'
  | 'notifications'
  | 'apply';

export interface FacetChange {
  facet: Facet;
  /** One line: what changed. */
  summary: string;
  /** The readable diff, one entry per line (`- before`, `+ after`, `~ changed`). */
  diff: string[];
}

/** What the catalog query says belongs to the agent (JSON keys: [schema, name], [schema, table, column], ...). */
export interface AgentFacts {
  relations: Set<string>;
  columns: Set<string>;
  constraints: Set<string>;
  types: Set<string>;
}

export interface TableRows {
  count: number;
  /** md5 of every row (the table's non-agent columns), sorted. */
  hash: string;
  /** The same without the rows this case is expected to add (tracking table, events), when it has some. */
  hashWithoutCase?: string;
  countWithoutCase?: number;
}

export interface SequenceValue {
  lastValue: string;
  isCalled: boolean;
}

export interface Snapshot {
  /** `<group> <key>` → definition, for every object that is not the agent's, and the built-in catalogues' hashes. */
  catalog: Map<string, string>;
  /** Agent objects that reach core data (catalog.ts REACH): key → why. */
  reach: Map<string, string>;
  facts: AgentFacts;
  /** pg_dump --schema-only, agent objects filtered out: entry → its DDL; undefined when pg_dump is not available. */
  dump?: Map<string, string>;
  rows: Map<string, TableRows>;
  sequences: Map<string, SequenceValue>;
  /** What a query on Forge's own pool sees of its session afterwards. */
  session: Record<string, string>;
  /** Advisory locks in this database: `classid/objid/objsubid mode granted held-by`. */
  advisoryLocks: string[];
  largeObjects: number;
  /** Files the server could have written (data directory outside its own bookkeeping, /tmp, ...); undefined when skipped. */
  files?: string[];
  /** Milliseconds each part took, for the timing summary. */
  timing: Record<string, number>;
}

// ---------------------------------------------------------------------------------------------------------------
// Diffs

function indent(text: string, prefix: string): string {
  return text.split('\n').join(`\n${prefix}`);
}

/** Keyed diff: removed, added, changed entries. */
export function diffMaps(before: Map<string, string>, after: Map<string, string>): string[] {
  const keys = [...new Set([...before.keys(), ...after.keys()])].sort();
  const out: string[] = [];
  for (const key of keys) {
    const a = before.get(key);
    const b = after.get(key);
    if (a === b) continue;
    if (b === undefined) out.push(`- ${key}: ${indent(a ?? '', '    ')}`);
    else if (a === undefined) out.push(`+ ${key}: ${indent(b, '    ')}`);
    else if (!a.includes('\n') && !b.includes('\n')) out.push(`~ ${key}:\n    before: ${a}\n    after:  ${b}`);
    else
      out.push(
        `~ ${key}:\n${lineDiff(a.split('\n'), b.split('\n'))
          .map((l) => `    ${l}`)
          .join('\n')}`,
      );
  }
  return out;
}

/** Set diff of sorted string lists. */
function diffLists(before: string[], after: string[]): string[] {
  const a = new Map<string, number>();
  for (const x of before) a.set(x, (a.get(x) ?? 0) + 1);
  const b = new Map<string, number>();
  for (const x of after) b.set(x, (b.get(x) ?? 0) + 1);
  const out: string[] = [];
  for (const [x, n] of a) for (let i = b.get(x) ?? 0; i < n; i++) out.push(`- ${x}`);
  for (const [x, n] of b) for (let i = a.get(x) ?? 0; i < n; i++) out.push(`+ ${x}`);
  return out.sort((p, q) => p.slice(2).localeCompare(q.slice(2)));
}

/** A line diff (longest common subsequence) of two short texts: `  same`, `- removed`, `+ added`. */
function lineDiff(a: string[], b: string[]): string[] {
  const n = a.length;
  const m = b.length;
  const lcs: number[][] = Array.from({ length: n + 1 }, () => new Array<number>(m + 1).fill(0));
  for (let i = n - 1; i >= 0; i--) {
    for (let j = m - 1; j >= 0; j--) lcs[i][j] = a[i] === b[j] ? lcs[i + 1][j + 1] + 1 : Math.max(lcs[i + 1][j], lcs[i][j + 1]);
  }
  const out: string[] = [];
  let i = 0;
  let j = 0;
  while (i < n || j < m) {
    if (i < n && j < m && a[i] === b[j]) {
      out.push(`  ${a[i]}`);
      i++;
      j++;
    } else if (j < m && (i === n || lcs[i][j + 1] >= lcs[i + 1][j])) {
      out.push(`+ ${b[j++]}`);
    } else {
      out.push(`- ${a[i++]}`);
    }
  }
  return out;
}

// ---------------------------------------------------------------------------------------------------------------
// pg_dump

interface DumpEntry {
  name: string;
  type: string;
  schema: string;
  body: string[];
}

const HEADER = /^-- (?:Data for )?Name: (.*); Type: (.*); Schema: (.*); Owner: (.*)$/;

/** pg_dump's own session settings and bookkeeping, which move with the order of entries, not with the schema. */
function isBookkeeping(line: string): boolean {
  return (
    line.trim() === '' ||
    line.startsWith('--') ||
    line.startsWith('\\restrict') ||
    line.startsWith('\\unrestrict') ||
    /^SET [a-z_]+ = .*;$/.test(line) ||
    line.startsWith("SELECT pg_catalog.set_config('search_path', '', false);")
  );
}

export function parseDump(text: string): DumpEntry[] {
  const entries: DumpEntry[] = [];
  let current: DumpEntry | undefined;
  for (const line of text.split('\n')) {
    const header = HEADER.exec(line);
    if (header) {
      current = { name: header[1], type: header[2], schema: header[3], body: [] };
      entries.push(current);
    } else if (current && !isBookkeeping(line)) {
      current.body.push(line);
    }
  }
  return entries;
}

const key = (...parts: string[]) => JSON.stringify(parts);

/** One identifier as pg_dump writes it (quoted when it must be), and the rest of the text. */
function readIdentifier(text: string): [string, string] | undefined {
  if (text.startsWith('"')) {
    let i = 1;
    let out = '';
    while (i < text.length) {
      if (text[i] === '"') {
        if (text[i + 1] === '"') {
          out += '"';
          i += 2;
          continue;
        }
        return [out, text.slice(i + 1)];
      }
      out += text[i++];
    }
    return undefined;
  }
  const m = /^([^\s,.()"]+)/.exec(text);
  return m ? [m[1], text.slice(m[1].length)] : undefined;
}

const RELATION_ENTRY = new Set(['TABLE', 'VIEW', 'MATERIALIZED VIEW', 'SEQUENCE', 'SEQUENCE OWNED BY', 'INDEX', 'FOREIGN TABLE']);
const CONSTRAINT_ENTRY = new Set(['CONSTRAINT', 'FK CONSTRAINT', 'CHECK CONSTRAINT']);

/** Whether a pg_dump entry is an agent object (SCHEMA_POLICY.md "Names"), judged by the catalog's classification. */
function isAgentEntry(e: DumpEntry, facts: AgentFacts): boolean {
  const s = e.schema;
  if (RELATION_ENTRY.has(e.type)) return facts.relations.has(key(s, e.name));
  if (e.type === 'TYPE' || e.type === 'DOMAIN') return facts.types.has(key(s, e.name));
  if (e.type === 'TABLE ATTACH' || e.type === 'INDEX ATTACH') {
    // A partition (or its index) attached to its parent: the agent's when both are (PARTITION OF an agent table).
    const parent = /^ALTER (?:TABLE|INDEX) (?:ONLY )?(?:[^ .]+\.)?([^ .]+) ATTACH PARTITION/.exec(e.body.join(' ').trim());
    return facts.relations.has(key(s, e.name)) && parent !== null && facts.relations.has(key(s, parent[1]));
  }
  if (e.type === 'DEFAULT') {
    const [table, column] = splitOnce(e.name, ' ');
    return facts.relations.has(key(s, table)) || facts.columns.has(key(s, table, column));
  }
  if (CONSTRAINT_ENTRY.has(e.type)) {
    const [table, con] = splitOnce(e.name, ' ');
    return facts.constraints.has(key(s, table, con));
  }
  if (e.type === 'COMMENT') {
    let m = /^COLUMN (.+)\.([^.]+)$/.exec(e.name);
    if (m) return facts.relations.has(key(s, m[1])) || facts.columns.has(key(s, m[1], m[2]));
    m = /^CONSTRAINT (.+) ON (DOMAIN )?(.+)$/.exec(e.name);
    if (m) return facts.constraints.has(key(s, m[3], m[1]));
    m = /^(TABLE|VIEW|MATERIALIZED VIEW|SEQUENCE|INDEX|FOREIGN TABLE) (.+)$/.exec(e.name);
    if (m) return facts.relations.has(key(s, m[2]));
    m = /^(TYPE|DOMAIN) (.+)$/.exec(e.name);
    if (m) return facts.types.has(key(s, m[2]));
  }
  // Privileges (ACL), triggers, rules, policies, functions, schemas, ...: never the agent's to have.
  return false;
}

function splitOnce(text: string, sep: string): [string, string] {
  const i = text.indexOf(sep);
  return i < 0 ? [text, ''] : [text.slice(0, i), text.slice(i + sep.length)];
}

/** A core table's DDL without its agent columns and the constraints PostgreSQL or the agent named for them. */
function filterTableBody(e: DumpEntry, facts: AgentFacts): string[] {
  const out: string[] = [];
  for (const line of e.body) {
    if (line.startsWith('    ')) {
      const rest = line.slice(4);
      const constraint = /^CONSTRAINT (.*)$/.exec(rest);
      const ident = readIdentifier(constraint ? constraint[1] : rest);
      if (ident && constraint && facts.constraints.has(key(e.schema, e.name, ident[0]))) continue;
      if (ident && !constraint && facts.columns.has(key(e.schema, e.name, ident[0]))) continue;
      // The comma after the last column comes and goes with the agent's columns after it.
      out.push(line.replace(/,$/, ''));
      continue;
    }
    const alter = / ALTER COLUMN (.*)$/.exec(line);
    const column = alter && readIdentifier(alter[1]);
    if (column && facts.columns.has(key(e.schema, e.name, column[0]))) continue;
    out.push(line);
  }
  return out;
}

/** The dump as entry → DDL, agent objects and the agent's columns taken out. */
export function filterDump(entries: DumpEntry[], facts: AgentFacts): Map<string, string> {
  const out = new Map<string, string>();
  for (const e of entries) {
    if (isAgentEntry(e, facts)) continue;
    const body = e.type === 'TABLE' ? filterTableBody(e, facts) : e.body;
    const where = e.schema === '-' ? '' : ` [schema ${e.schema}]`;
    let k = `${e.type}: ${e.name}${where}`;
    for (let n = 2; out.has(k); n++) k = `${e.type}: ${e.name}${where} #${n}`;
    out.set(k, body.join('\n'));
  }
  return out;
}

/** The pg_dump to use for a server of this major version: the one of that version, else the one on PATH. */
export function findPgDump(serverMajor: number): string | undefined {
  for (const candidate of [`/usr/lib/postgresql/${serverMajor}/bin/pg_dump`, '/usr/bin/pg_dump']) {
    if (existsSync(candidate)) return candidate;
  }
  return undefined;
}

export async function runPgDump(pgDump: string, url: string): Promise<string> {
  const { stdout } = await execFileAsync(pgDump, ['--schema-only', '--no-password', '--lock-wait-timeout=5000', `--dbname=${url}`], {
    maxBuffer: 64 * 1024 * 1024,
    timeout: 30_000,
  });
  return stdout;
}

// ---------------------------------------------------------------------------------------------------------------
// Files

/** The server's own bookkeeping under its data directory: written all the time, by design (the brief's list). */
const SERVER_OWN_DIRS = new Set([
  'pg_wal',
  'base',
  'global',
  'pg_xact',
  'pg_stat_tmp',
  'pg_logical',
  'pg_subtrans',
  'pg_multixact',
  'pg_notify',
  'pg_stat',
  'pg_snapshots',
  'pg_replslot',
  'pg_commit_ts',
]);

export interface FileWatch {
  dataDir: string;
  /** uid of the server's operating-system user: files it writes elsewhere belong to it. */
  serverUid: number;
  /** Other directories the server's user can write to (its home, /tmp, /dev/shm, its socket directory). */
  elsewhere: string[];
}

/** Where the cluster that listens on `port` keeps its data, from Debian's pg_lsclusters; else the usual path. */
export async function findFileWatch(port: number): Promise<FileWatch | string> {
  let dataDir: string | undefined;
  try {
    const { stdout } = await execFileAsync('pg_lsclusters', ['-h'], { timeout: 10_000 });
    for (const line of stdout.split('\n')) {
      const cols = line.trim().split(/\s+/);
      if (cols.length >= 6 && Number(cols[2]) === port) dataDir = cols[5];
    }
  } catch {
    // Not Debian's packaging: try the usual place below.
  }
  if (!dataDir) {
    const base = '/var/lib/postgresql';
    const found = existsSync(base)
      ? readdirSync(base)
          .map((v) => path.join(base, v, 'main'))
          .filter((d) => existsSync(path.join(d, 'PG_VERSION')))
      : [];
    if (found.length !== 1) return `no data directory found for the server on port ${port} (pg_lsclusters, /var/lib/postgresql/*/main)`;
    dataDir = found[0];
  }
  let stats: Stats;
  try {
    stats = lstatSync(dataDir);
    readdirSync(dataDir);
  } catch (err) {
    return `the data directory ${dataDir} cannot be read by this process (${(err as Error).message})`;
  }
  const serverUid = stats.uid;
  const home = homeOf(serverUid);
  const elsewhere = ['/tmp', '/dev/shm', '/var/run/postgresql', ...(home ? [home] : [])].filter((d) => existsSync(d));
  return { dataDir, serverUid, elsewhere };
}

function homeOf(uid: number): string | undefined {
  try {
    for (const line of readFileSync('/etc/passwd', 'utf8').split('\n')) {
      const cols = line.split(':');
      if (Number(cols[2]) === uid) return cols[5];
    }
  } catch {
    return undefined;
  }
  return undefined;
}

/**
 * The files the server could have written: everything under its data directory outside its own bookkeeping (path and
 * size of regular files; mtimes left out), and what its user owns in the other writable places (paths only; the
 * server's dynamic shared memory segments in /dev/shm come and go by themselves, and so do libfaketime's).
 */
export function listFiles(watch: FileWatch): string[] {
  const out: string[] = [];
  const walk = (dir: string, depth: number, visit: (full: string, st: Stats) => boolean) => {
    let names: string[];
    try {
      names = readdirSync(dir);
    } catch {
      return;
    }
    for (const name of names) {
      const full = path.join(dir, name);
      let st: Stats;
      try {
        st = lstatSync(full);
      } catch {
        continue; // gone while we looked
      }
      if (visit(full, st) && st.isDirectory() && depth > 0) walk(full, depth - 1, visit);
    }
  };
  walk(watch.dataDir, 6, (full, st) => {
    const rel = path.relative(watch.dataDir, full);
    if (!rel.includes(path.sep) && SERVER_OWN_DIRS.has(rel)) return false;
    out.push(st.isFile() ? `${full} (${st.size} bytes)` : `${full}${st.isDirectory() ? '/' : ''}`);
    return true;
  });
  for (const root of watch.elsewhere) {
    walk(root, 3, (full, st) => {
      if (full === watch.dataDir || full.startsWith(watch.dataDir + path.sep)) return false;
      if (/^\/dev\/shm\/PostgreSQL\.\d+$/.test(full)) return false;
      // libfaketime's counters, by the pid of the process that preloaded it: the private clusters of the writes test
      // (writes-harness.ts), which run as this server's OS user and may run beside this test, put them here. The
      // watched server never runs under libfaketime, and its SQL cannot name a file to write without superuser.
      if (/^\/dev\/shm\/(faketime_shm_|sem\.faketime_sem_)\d+$/.test(full)) return false;
      if (st.uid === watch.serverUid) out.push(`${full}${st.isDirectory() ? '/' : ''}`);
      // Descend where the server's user could write: its own directories and world-writable ones.
      return st.uid === watch.serverUid || (st.mode & 0o002) !== 0;
    });
  }
  return out.sort();
}

// ---------------------------------------------------------------------------------------------------------------
// Comparison

/** What an applied case may change besides agent objects: its one row in the tracking table and its one event. */
export interface Expectation {
  /** The migration committed: the tracking table and events each gain exactly one row, events' sequence one value. */
  applied: boolean;
  /** The migration failed at COMMIT (after the event's insert took a value of events' sequence, which survives). */
  failedAtCommit: boolean;
  trackingTable: string;
  eventsTable: string;
  eventsSequence: string;
}

function nextValue(v: SequenceValue): SequenceValue {
  return v.isCalled ? { lastValue: String(BigInt(v.lastValue) + 1n), isCalled: true } : { lastValue: v.lastValue, isCalled: true };
}

const showSequence = (v: SequenceValue | undefined) => (v ? `${v.lastValue}${v.isCalled ? '' : ' (not called yet)'}` : '(none)');

export function compareSnapshots(before: Snapshot, after: Snapshot, expect: Expectation): FacetChange[] {
  const changes: FacetChange[] = [];
  const add = (facet: Facet, summary: string, diff: string[]) => {
    if (diff.length > 0) changes.push({ facet, summary, diff });
  };

  add('catalog', 'objects outside the agent namespace changed', diffMaps(before.catalog, after.catalog));
  if (before.dump && after.dump) add('pg_dump', 'the DDL outside the agent namespace changed', diffMaps(before.dump, after.dump));
  // Only what this case added: a reach row is about an agent object, which the cleanup after each case drops.
  add(
    'reach',
    'agent objects reach core data (SCHEMA_POLICY.md "Core tables stay the application\'s")',
    diffMaps(before.reach, after.reach).filter((d) => !d.startsWith('- ')),
  );

  const rowDiff: string[] = [];
  for (const table of [...new Set([...before.rows.keys(), ...after.rows.keys()])].sort()) {
    const a = before.rows.get(table);
    const b = after.rows.get(table);
    if (!a || !b) {
      rowDiff.push(`${a ? '-' : '+'} ${table}: ${(a ?? b)?.count} row(s)`);
      continue;
    }
    const grows = expect.applied && (table === expect.trackingTable || table === expect.eventsTable);
    if (grows) {
      const forCase = b.count - (b.countWithoutCase ?? 0);
      const others = (b.countWithoutCase ?? 0) - a.count;
      if (forCase !== 1) rowDiff.push(`~ ${table}: ${forCase} row(s) for this migration, expected 1`);
      if (others !== 0) rowDiff.push(`~ ${table}: ${a.count} → ${b.count} row(s): ${others > 0 ? '+' : ''}${others} besides the migration's`);
      else if (b.hashWithoutCase !== a.hash) rowDiff.push(`~ ${table}: the rows that were there before changed`);
    } else {
      if (b.count !== a.count) rowDiff.push(`~ ${table}: ${a.count} → ${b.count} row(s)`);
      else if (b.hash !== a.hash) rowDiff.push(`~ ${table}: same count, different contents`);
    }
  }
  add('rows', 'core rows changed', rowDiff);

  const seqDiff: string[] = [];
  for (const seq of [...new Set([...before.sequences.keys(), ...after.sequences.keys()])].sort()) {
    const a = before.sequences.get(seq);
    const b = after.sequences.get(seq);
    const same = (x?: SequenceValue, y?: SequenceValue) => !!x && !!y && x.lastValue === y.lastValue && x.isCalled === y.isCalled;
    if (same(a, b)) continue;
    if (seq === expect.eventsSequence && a && (expect.applied || expect.failedAtCommit) && same(nextValue(a), b)) continue;
    const expected = seq === expect.eventsSequence && a && expect.applied ? `, expected ${showSequence(nextValue(a))}` : '';
    seqDiff.push(`~ ${seq}: ${showSequence(a)} → ${showSequence(b)}${expected}`);
  }
  add('sequences', 'core sequence values changed', seqDiff);

  const sessionBefore = new Map(Object.entries(before.session).filter(([k]) => k !== 'backend pid'));
  const sessionAfter = new Map(Object.entries(after.session).filter(([k]) => k !== 'backend pid'));
  add(
    'session',
    `Forge's pool session changed (backend ${before.session['backend pid']} → ${after.session['backend pid']})`,
    diffMaps(sessionBefore, sessionAfter),
  );
  add('advisory locks', 'advisory locks held in this database changed', diffLists(before.advisoryLocks, after.advisoryLocks));
  if (after.largeObjects !== before.largeObjects) {
    add('large objects', 'large objects were created or removed', [`~ pg_largeobject_metadata: ${before.largeObjects} → ${after.largeObjects}`]);
  }
  if (before.files && after.files) add('files', 'files the server could have written changed', diffLists(before.files, after.files));
  return changes;
}

export function formatChanges(changes: FacetChange[], maxLines = 60): string {
  const out: string[] = [];
  for (const c of changes) {
    out.push(`  [${c.facet}] ${c.summary}`);
    const lines = c.diff.flatMap((d) => d.split('\n'));
    for (const line of lines.slice(0, maxLines)) out.push(`    ${line}`);
    if (lines.length > maxLines) out.push(`    ... ${lines.length - maxLines} more line(s)`);
  }
  return out.join('\n');
}
