/**
 * The application's writes of the write differential (issue 27, "A differential test of the application's later
 * writes"), generated from the catalog and nothing else: every core table's columns, types, keys and foreign keys are
 * read once, before any migration, and turned into the INSERTs, UPDATEs, upserts and DELETEs an application would
 * send, with edge values of each column's type (NULL, empty and long strings, odd Unicode, the ends of every number
 * and date range, ...). No write is written for an attack: what the agent attaches to a core table (a DEFAULT, an
 * index expression or predicate, a CHECK, a sequence) runs on these writes whatever it is, so a change in their
 * outcome or cost is seen without anyone guessing the attack.
 *
 * Each write runs in a transaction of its own that is rolled back (`BEGIN; <write>; ROLLBACK`), so the world is the
 * same for every write and every case; only sequences advance. This module is the data and the running of one write;
 * writes-harness.ts owns the databases.
 */
import type { Client } from 'pg';

interface CoreColumn {
  name: string;
  /** format_type of the column: `numeric(12,2)`, `text`, ... */
  type: string;
  /** The type's name, a domain's base type's: `int4`, `numeric`, `timestamptz`, `_text`, ... */
  base: string;
  /** pg_type.typcategory of that type: N numeric, S string, D date/time, B boolean, A array, E enum, ... */
  category: string;
  /** The column's (or its domain's) typmod; -1 when none. */
  typmod: number;
  notNull: boolean;
  hasDefault: boolean;
  /** pg_attribute.attidentity: '' not an identity, 'a' GENERATED ALWAYS, 'd' BY DEFAULT. */
  identity: string;
  /** pg_attribute.attgenerated: '' or 's' (stored generated column, never written). */
  generated: string;
  enumLabels: string[];
}

interface ForeignKey {
  columns: string[];
  refTable: string;
  refColumns: string[];
  /** Text values of one row of the referenced table (the first by its key), read after seeding. */
  refValues?: Array<string | null>;
}

export interface CoreTable {
  name: string;
  columns: CoreColumn[];
  /** Primary key columns, or [] when there is none. */
  key: string[];
  /** Column sets that must be unique (the primary key, unique constraints, plain unique indexes). */
  uniques: string[][];
  foreignKeys: ForeignKey[];
  /** Text values of the key of the row the UPDATEs and DELETEs aim at (the first by key), when there is a key. */
  sampleKey?: Array<string | null>;
}

export interface Write {
  /** Stable across runs: `orders insert status=empty`. */
  id: string;
  table: string;
  sql: string;
}

export type Outcome = { ok: true; ms: number } | { ok: false; ms: number; code: string; message: string };

const quoteIdent = (name: string) => `"${name.replace(/"/g, '""')}"`;
const quoteLiteral = (text: string) => `'${text.replace(/'/g, "''")}'`;
const lit = (v: string | null) => (v === null ? 'NULL' : quoteLiteral(v));

// ---------------------------------------------------------------------------------------------------------------
// The catalog

/**
 * The core tables of `schema`: every ordinary or partitioned table whose name is not the agent's (`agent_…`) and not
 * one of `exclude` (Forge's own tables). Read before any migration, so no agent column is among the columns.
 */
export async function readCoreTables(client: Client, schema: string, exclude: string[]): Promise<CoreTable[]> {
  const cols = await client.query<{
    table: string;
    name: string;
    type: string;
    base: string;
    category: string;
    typmod: number;
    not_null: boolean;
    has_default: boolean;
    identity: string;
    generated: string;
    labels: string[] | null;
  }>(
    `SELECT c.relname AS table, a.attname AS name, format_type(a.atttypid, a.atttypmod) AS type, bt.typname AS base,
            bt.typcategory AS category, CASE WHEN t.typtype = 'd' AND a.atttypmod = -1 THEN t.typtypmod ELSE a.atttypmod END AS typmod,
            a.attnotnull OR (t.typtype = 'd' AND t.typnotnull) AS not_null, a.atthasdef OR t.typdefault IS NOT NULL AS has_default,
            a.attidentity::text AS identity, a.attgenerated::text AS generated,
            (SELECT array_agg(e.enumlabel::text ORDER BY e.enumsortorder) FROM pg_enum e WHERE e.enumtypid = bt.oid) AS labels
       FROM pg_class c
       JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
       JOIN pg_type t ON t.oid = a.atttypid
       JOIN pg_type bt ON bt.oid = CASE WHEN t.typtype = 'd' THEN t.typbasetype ELSE t.oid END
      WHERE c.relnamespace = $1::regnamespace AND c.relkind IN ('r', 'p') AND NOT c.relispartition
        AND NOT starts_with(c.relname, 'agent_') AND NOT c.relname = ANY ($2)
      ORDER BY c.relname, a.attnum`,
    [schema, exclude],
  );
  const tables = new Map<string, CoreTable>();
  for (const r of cols.rows) {
    let t = tables.get(r.table);
    if (!t) tables.set(r.table, (t = { name: r.table, columns: [], key: [], uniques: [], foreignKeys: [] }));
    t.columns.push({
      name: r.name,
      type: r.type,
      base: r.base,
      category: r.category,
      typmod: Number(r.typmod),
      notNull: r.not_null,
      hasDefault: r.has_default,
      identity: r.identity,
      generated: r.generated,
      enumLabels: r.labels ?? [],
    });
  }
  const cons = await client.query<{ table: string; kind: string; cols: string[]; ref_table: string | null; ref_cols: string[] | null }>(
    `SELECT c.relname AS table, k.contype::text AS kind,
            (SELECT array_agg(a.attname::text ORDER BY x.ord) FROM unnest(k.conkey) WITH ORDINALITY x(n, ord)
               JOIN pg_attribute a ON a.attrelid = k.conrelid AND a.attnum = x.n) AS cols,
            f.relname AS ref_table,
            (SELECT array_agg(a.attname::text ORDER BY x.ord) FROM unnest(k.confkey) WITH ORDINALITY x(n, ord)
               JOIN pg_attribute a ON a.attrelid = k.confrelid AND a.attnum = x.n) AS ref_cols
       FROM pg_constraint k JOIN pg_class c ON c.oid = k.conrelid LEFT JOIN pg_class f ON f.oid = k.confrelid
      WHERE k.contype IN ('p', 'u', 'f') AND c.relnamespace = $1::regnamespace AND c.relname = ANY ($2)
     UNION ALL
     SELECT c.relname, 'i', (SELECT array_agg(a.attname::text ORDER BY x.ord) FROM unnest(i.indkey::int2[]) WITH ORDINALITY x(n, ord)
               JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = x.n), NULL, NULL
       FROM pg_index i JOIN pg_class c ON c.oid = i.indrelid
      WHERE i.indisunique AND i.indpred IS NULL AND i.indexprs IS NULL AND c.relnamespace = $1::regnamespace AND c.relname = ANY ($2)
        AND NOT EXISTS (SELECT 1 FROM pg_constraint k WHERE k.conindid = i.indexrelid)
      ORDER BY 1, 2, 3`,
    [schema, [...tables.keys()]],
  );
  for (const r of cons.rows) {
    const t = tables.get(r.table);
    if (!t) continue;
    if (r.kind === 'p') t.key = r.cols;
    if (r.kind === 'p' || r.kind === 'u' || r.kind === 'i') t.uniques.push(r.cols);
    if (r.kind === 'f' && r.ref_table && r.ref_cols) t.foreignKeys.push({ columns: r.cols, refTable: r.ref_table, refColumns: r.ref_cols });
  }
  return [...tables.values()];
}

/** The key of the row updates and deletes aim at, and a referenced row for each foreign key (run after seeding). */
export async function readSampleRows(client: Client, schema: string, tables: CoreTable[]): Promise<void> {
  const first = async (table: string, columns: string[], orderBy: string[]) => {
    const list = columns.map((c) => `${quoteIdent(c)}::text`).join(', ');
    const order = orderBy.length > 0 ? orderBy.map(quoteIdent).join(', ') : 'ctid';
    const { rows } = await client.query({ text: `SELECT ${list} FROM ${quoteIdent(schema)}.${quoteIdent(table)} ORDER BY ${order} LIMIT 1`, rowMode: 'array' });
    return rows[0] as Array<string | null> | undefined;
  };
  for (const t of tables) {
    if (t.key.length > 0) t.sampleKey = await first(t.name, t.key, t.key);
    for (const fk of t.foreignKeys) fk.refValues = await first(fk.refTable, fk.refColumns, fk.refColumns);
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Values

/** A deterministic string of letters and digits that pglz cannot shrink (no repeats to speak of). */
function incompressible(length: number, seed = 1): string {
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
  let x = seed >>> 0 || 1;
  let out = '';
  for (let i = 0; i < length; i++) {
    // xorshift32
    x ^= x << 13;
    x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5;
    x >>>= 0;
    out += alphabet[x % alphabet.length];
  }
  return out;
}

const ODD_UNICODE =
  'e\u0301 \u00e9 \u{1D518}\u{1D52B} \u202Eevil\u202C \u200B\uFEFF \u0130\u0131\u00df\u01C5\uFB03 \u2028\u0085 \u{1F469}\u200D\u{1F469}\u200D\u{1F467} \u0627\u0644\u0639\u0631\u0628\u064A\u0629';

/**
 * Text edge values. The long ones are what an index on a text column meets: 256 kB that compresses (to about 2.9 kB,
 * just over the 2,704 bytes of a btree entry), incompressible text on either side of that limit, and text whose case
 * mapping grows it by half (U+023A Ⱥ is two bytes, its lower case U+2C65 three). 256 kB rather than 1 MB: the same
 * limits, a quarter of the cost (the longest writes dominate the test's time).
 */
const TEXT_EDGES: Array<[string, string]> = [
  ['empty', ''],
  ['blank', '   '],
  ['odd Unicode', ODD_UNICODE],
  ['invalid-looking', '-1e309 NaN 2026-02-30 {"a": \'; DROP TABLE users; -- \\ %_'],
  ['256 kB compressible', 'x'.repeat(256 * 1024)],
  ['2,000 incompressible characters', incompressible(2_000, 7)],
  ['6,000 incompressible characters', incompressible(6_000, 11)],
  ['1,300 × U+023A (2,600 bytes; 3,900 in lower case)', '\u023A'.repeat(1_300)],
];

const INT_RANGES: Record<string, [string, string]> = {
  int2: ['-32768', '32767'],
  int4: ['-2147483648', '2147483647'],
  int8: ['-9223372036854775808', '9223372036854775807'],
};

/** Precision and scale of a numeric typmod, or undefined for an unconstrained numeric. */
function numericShape(typmod: number): { precision: number; scale: number } | undefined {
  if (typmod < 4) return undefined;
  const t = typmod - 4;
  const scale = ((t & 0x7ff) ^ 1024) - 1024; // PostgreSQL 15 stores a signed 11-bit scale
  return { precision: (t >> 16) & 0xffff, scale };
}

/** Length limit of varchar(n) / char(n), when the column has one. */
function charLimit(c: CoreColumn): number | undefined {
  return (c.base === 'varchar' || c.base === 'bpchar') && c.typmod >= 4 ? c.typmod - 4 : undefined;
}

/** The edge values of a column's type, NULL first. Types not listed here get NULL only (and their default). */
function edgeValues(c: CoreColumn): Array<[string, string | null]> {
  const out: Array<[string, string | null]> = [['NULL', null]];
  const add = (...values: Array<[string, string]>) => out.push(...values);
  const limit = charLimit(c);
  if (INT_RANGES[c.base]) {
    const [min, max] = INT_RANGES[c.base];
    add(['min', min], ['max', max], ['zero', '0'], ['-1', '-1']);
  } else if (c.base === 'numeric') {
    const shape = numericShape(c.typmod);
    if (shape && shape.scale >= 0 && shape.precision >= shape.scale) {
      const whole = '9'.repeat(shape.precision - shape.scale) || '0';
      const max = shape.scale > 0 ? `${whole}.${'9'.repeat(shape.scale)}` : whole;
      const step = shape.scale > 0 ? `0.${'0'.repeat(shape.scale - 1)}1` : '1';
      add(['max', max], ['-max', `-${max}`], ['smallest step', step], ['-smallest step', `-${step}`], ['zero', '0'], ['NaN', 'NaN']);
      add(['one past max', `1${'0'.repeat(shape.precision - shape.scale)}`]);
    } else {
      add(
        ['huge', '9.99e1000'],
        ['-huge', '-9.99e1000'],
        ['tiny', '1e-1000'],
        ['zero', '0'],
        ['NaN', 'NaN'],
        ['Infinity', 'Infinity'],
        ['-Infinity', '-Infinity'],
      );
    }
  } else if (c.base === 'float4' || c.base === 'float8') {
    const [max, tiny] = c.base === 'float4' ? ['3.4028235e38', '1.4e-45'] : ['1.7976931348623157e308', '4.9e-324'];
    add(['max', max], ['-max', `-${max}`], ['subnormal', tiny], ['-0', '-0'], ['NaN', 'NaN'], ['Infinity', 'Infinity'], ['-Infinity', '-Infinity']);
  } else if (limit !== undefined) {
    add(
      ['empty', ''],
      [`${limit} × x`, 'x'.repeat(limit)],
      [`${limit} × €`, '\u20AC'.repeat(limit)],
      [`${limit + 1} × x`, 'x'.repeat(limit + 1)],
      ['odd Unicode', ODD_UNICODE.slice(0, limit)],
    );
  } else if (c.category === 'S') {
    add(...TEXT_EDGES);
  } else if (c.base === 'bool') {
    add(['true', 'true'], ['false', 'false']);
  } else if (c.base === 'date') {
    add(['first', '4714-11-24 BC'], ['last', '5874897-12-31'], ['infinity', 'infinity'], ['-infinity', '-infinity'], ['leap day', '2000-02-29']);
  } else if (c.base === 'timestamp') {
    add(
      ['first', '4714-11-24 00:00:00 BC'],
      ['last', '294276-12-31 23:59:59.999999'],
      ['infinity', 'infinity'],
      ['-infinity', '-infinity'],
      ['epoch', '1970-01-01 00:00:00'],
    );
  } else if (c.base === 'timestamptz') {
    add(
      ['first', '4714-11-24 00:00:00+00 BC'],
      ['last', '294276-12-31 23:59:59.999999+00'],
      ['infinity', 'infinity'],
      ['-infinity', '-infinity'],
      ['2038-01-19 03:14:08+00', '2038-01-19 03:14:08+00'],
    );
  } else if (c.base === 'time' || c.base === 'timetz') {
    add(['midnight', '00:00:00'], ['24:00', '24:00:00'], ['last', '23:59:59.999999']);
  } else if (c.base === 'interval') {
    add(['max', '178000000 years'], ['-max', '-178000000 years'], ['zero', '0'], ['microsecond', '1 microsecond']);
  } else if (c.base === 'uuid') {
    add(['nil', '00000000-0000-0000-0000-000000000000'], ['max', 'ffffffff-ffff-ffff-ffff-ffffffffffff']);
  } else if (c.base === 'json' || c.base === 'jsonb') {
    add(
      ['{}', '{}'],
      ['[]', '[]'],
      ['null', 'null'],
      ['""', '""'],
      ['deep', `${'['.repeat(1_000)}${']'.repeat(1_000)}`],
      ['10,000 elements', `[${Array.from({ length: 10_000 }, (_, i) => i).join(',')}]`],
      ['odd Unicode', JSON.stringify({ [ODD_UNICODE]: ODD_UNICODE })],
    );
  } else if (c.base === 'bytea') {
    add(
      ['empty', '\\x'],
      [
        '256 kB',
        `\\x${incompressible(256 * 1024, 3)
          .split('')
          .map((ch) => (ch.charCodeAt(0) & 0xff).toString(16).padStart(2, '0'))
          .join('')}`,
      ],
    );
  } else if (c.base === 'inet' || c.base === 'cidr') {
    add(['0.0.0.0/0', '0.0.0.0/0'], ['::/0', '::/0'], ['max', 'ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff']);
  } else if (c.category === 'A') {
    add(['{}', '{}'], ['{NULL}', '{NULL}']);
  } else if (c.category === 'E') {
    for (const label of c.enumLabels.slice(0, 10)) add([label, label]);
  }
  return out;
}

/**
 * An ordinary value of the column's type (what a well-formed application row holds), or undefined when the type is
 * not one this module knows. `n` makes it distinct from every other write's (unique columns), `fk` is the value a
 * foreign key column must hold.
 */
function normalValue(c: CoreColumn, n: number, unique: boolean, fk: string | null | undefined): string | null | undefined {
  if (fk !== undefined) return fk;
  const limit = charLimit(c);
  if (INT_RANGES[c.base]) return unique ? String(c.base === 'int2' ? 10_000 + (n % 20_000) : 900_000 + n) : '7';
  if (c.base === 'numeric') {
    const shape = numericShape(c.typmod);
    const room = shape ? shape.precision - Math.max(shape.scale, 0) : 20;
    if (room < 1) return '0';
    return unique ? String(900_000 + n).slice(-room) : '1';
  }
  if (c.base === 'float4' || c.base === 'float8') return unique ? `${n}.5` : '1.5';
  if (limit !== undefined) return (unique ? `w${n.toString(36)}` : 'w').slice(0, limit);
  if (c.category === 'S') return unique ? `w${n}-${c.name}` : `w-${c.name}`;
  if (c.base === 'bool') return 'true';
  const day = new Date(Date.UTC(2000, 0, 1) + (unique ? n : 0) * 86_400_000);
  if (c.base === 'date') return day.toISOString().slice(0, 10);
  if (c.base === 'timestamp') return day.toISOString().replace('T', ' ').replace('Z', '');
  if (c.base === 'timestamptz') return day.toISOString().replace('T', ' ').replace('Z', '+00');
  if (c.base === 'time' || c.base === 'timetz') return '12:00:00';
  if (c.base === 'interval') return unique ? `${n} seconds` : '1 day';
  if (c.base === 'uuid') return `00000000-0000-4000-8000-${n.toString(16).padStart(12, '0').slice(-12)}`;
  if (c.base === 'json' || c.base === 'jsonb') return unique ? `{"n": ${n}}` : '{}';
  if (c.base === 'bytea') return `\\x${n.toString(16).padStart(8, '0')}`;
  if (c.base === 'inet' || c.base === 'cidr') return `10.${(n >> 16) & 255}.${(n >> 8) & 255}.${n & 255}`;
  if (c.category === 'A') return '{}';
  if (c.category === 'E' && c.enumLabels.length > 0) return c.enumLabels[unique ? n % c.enumLabels.length : 0];
  return undefined;
}

// ---------------------------------------------------------------------------------------------------------------
// The writes

const writable = (c: CoreColumn) => c.generated === '' && c.identity !== 'a';

/** The column's value in a foreign key, when it is part of one (the referenced row's). */
function fkValue(t: CoreTable, column: string): string | null | undefined {
  for (const fk of t.foreignKeys) {
    const i = fk.columns.indexOf(column);
    if (i >= 0) return fk.refValues?.[i] ?? undefined;
  }
  return undefined;
}

const isUnique = (t: CoreTable, column: string) => t.uniques.some((u) => u.includes(column));

/**
 * The row an application inserts: a value for every column it must give (NOT NULL, no default, not generated or an
 * identity), the rest left to their defaults. Undefined when some such column has a type this module cannot fill.
 */
function baseRow(t: CoreTable, n: number): Map<string, string | null> | undefined {
  const row = new Map<string, string | null>();
  for (const c of t.columns) {
    if (!writable(c) || !c.notNull || c.hasDefault) continue;
    const v = normalValue(c, n, isUnique(t, c.name), fkValue(t, c.name));
    if (v === undefined) return undefined;
    row.set(c.name, v);
  }
  return row;
}

function insertSql(t: CoreTable, schema: string, rows: Array<Map<string, string | null>>, suffix = ''): string {
  const table = `${quoteIdent(schema)}.${quoteIdent(t.name)}`;
  const columns = [...rows[0].keys()];
  if (columns.length === 0) return `INSERT INTO ${table} DEFAULT VALUES${suffix}`;
  const values = rows.map((r) => `(${columns.map((c) => lit(r.get(c) ?? null)).join(', ')})`).join(',\n  ');
  return `INSERT INTO ${table} (${columns.map(quoteIdent).join(', ')}) VALUES ${values}${suffix}`;
}

const BULK_ROWS = 1_000;

/** Rows the harness commits before the baseline (an application's table is not empty); their `n` are their own. */
export function seedSql(t: CoreTable, schema: string, count: number): string | undefined {
  const rows: Array<Map<string, string | null>> = [];
  for (let i = 0; i < count; i++) {
    const row = baseRow(t, 500_000 + i);
    if (!row) return undefined;
    rows.push(row);
  }
  return rows.length > 0 ? insertSql(t, schema, rows) : undefined;
}

/**
 * Every write of the application on every core table: per table an insert of the minimal row, an insert and an
 * update of every edge value of every writable column, an insert of 1,000 rows at once, an upsert on the key, an
 * update of every row and a delete of one row.
 */
export function generateWrites(tables: CoreTable[], schema: string): { writes: Write[]; notes: string[] } {
  const writes: Write[] = [];
  const notes: string[] = [];
  let n = 0;
  for (const t of tables) {
    const table = `${quoteIdent(schema)}.${quoteIdent(t.name)}`;
    const push = (what: string, text: string) => writes.push({ id: `${t.name} ${what}`, table: t.name, sql: text });
    const keyed = t.key.length > 0 && t.sampleKey !== undefined;
    const where = keyed ? t.key.map((k, i) => `${quoteIdent(k)} = ${lit(t.sampleKey?.[i] ?? null)}`).join(' AND ') : undefined;
    const base = baseRow(t, ++n);
    if (!base) notes.push(`${t.name}: no insert generated (a required column of a type the generator does not know)`);
    else push('insert of the minimal row (defaults for the rest)', insertSql(t, schema, [base]));

    for (const c of t.columns.filter(writable)) {
      for (const [label, value] of edgeValues(c)) {
        const row = baseRow(t, ++n);
        if (row) {
          row.set(c.name, value);
          push(`insert ${c.name}=${label}`, insertSql(t, schema, [row]));
        }
        if (where) push(`update ${c.name}=${label}`, `UPDATE ${table} SET ${quoteIdent(c.name)} = ${lit(value)} WHERE ${where}`);
      }
    }

    if (base) {
      const rows: Array<Map<string, string | null>> = [];
      for (let i = 0; i < BULK_ROWS; i++) rows.push(baseRow(t, 1_000_000 + i) ?? base);
      push(`insert of ${BULK_ROWS} rows in one statement`, insertSql(t, schema, rows));
    }
    if (base && keyed) {
      const row = baseRow(t, ++n) ?? base;
      t.key.forEach((k, i) => row.set(k, t.sampleKey?.[i] ?? null));
      const other = t.columns.find((c) => writable(c) && !t.key.includes(c.name) && row.has(c.name));
      const action = other ? `DO UPDATE SET ${quoteIdent(other.name)} = EXCLUDED.${quoteIdent(other.name)}` : 'DO NOTHING';
      push('upsert on the key (ON CONFLICT)', insertSql(t, schema, [row], ` ON CONFLICT (${t.key.map(quoteIdent).join(', ')}) ${action}`));
    }
    const plain = t.columns.filter((c) => writable(c) && !isUnique(t, c.name) && !t.foreignKeys.some((f) => f.columns.includes(c.name)));
    const sets = plain.flatMap((c) => {
      const v = normalValue(c, 0, false, undefined);
      return v === undefined ? [] : [`${quoteIdent(c.name)} = ${lit(v)}`];
    });
    if (sets.length > 0) push('update of every row', `UPDATE ${table} SET ${sets.join(', ')}`);
    if (where) push('delete of one row', `DELETE FROM ${table} WHERE ${where}`);
  }
  return { writes, notes };
}

// ---------------------------------------------------------------------------------------------------------------
// Running one write

/**
 * Runs `write` on the application's connection in a transaction of its own, rolled back, and times it (the whole round
 * trip). Never throws for what PostgreSQL answers; `deadlineMs` bounds a write that never answers (the caller then
 * replaces the connection, which `lost` reports).
 */
export async function runWrite(client: Client, write: Write, deadlineMs: number): Promise<Outcome & { lost?: boolean }> {
  const started = performance.now();
  const ms = () => Math.round((performance.now() - started) * 10) / 10;
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<'deadline'>((resolve) => {
    timer = setTimeout(() => resolve('deadline'), deadlineMs);
  });
  try {
    const result = await Promise.race([client.query(`BEGIN;\n${write.sql};\nROLLBACK`).then(() => 'done' as const), deadline]);
    if (result === 'deadline') return { ok: false, ms: ms(), code: 'no answer', message: `no answer within ${deadlineMs} ms`, lost: true };
    return { ok: true, ms: ms() };
  } catch (err) {
    const took = ms();
    const e = err as { code?: string; message?: string };
    let lost = false;
    try {
      await Promise.race([client.query('ROLLBACK'), deadline.then(() => Promise.reject(new Error('deadline')))]);
    } catch {
      lost = true;
    }
    return { ok: false, ms: took, code: e.code ?? 'client error', message: String(e.message ?? err).slice(0, 300), lost };
  } finally {
    clearTimeout(timer);
  }
}

export function describeOutcome(o: Outcome): string {
  return o.ok ? `succeeded (${o.ms} ms)` : `failed ${o.code}: ${o.message} (${o.ms} ms)`;
}
