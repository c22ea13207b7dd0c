import type { ColumnDef, IndexElem, Node, TypeName } from 'libpg-query';
import type { CoreColumnFacts, CoreTablesUsage } from '../contract/policy-verdict';
import { isAgentName, namesOf, showIdent } from './names';
import type { Verdict } from './verdict';
import { reject } from './verdict';

/**
 * The widest entry PostgreSQL's B-tree takes on a default 8 kB page (BTMaxItemSize): a larger one is refused with
 * SQLSTATE 54000 ("index row size ... exceeds btree version 4 maximum 2704"). GiST, SP-GiST, GIN and BRIN entries
 * have limits of the same order; only a hash index stores a fixed 4-byte hash of any value.
 */
const INDEX_ENTRY_MAX_BYTES = 2704;
/** An index tuple's header, and the padding each value may need to be aligned (both counted generously). */
const ENTRY_HEADER_BYTES = 8;
const VALUE_ALIGN_BYTES = 4;
/**
 * What a column takes at most that an index of the application's own already holds alone and whole: every row the
 * application wrote fits in that index, so the values are no wider than its entry limit, less its header.
 */
const APP_INDEXED_BYTES = INDEX_ENTRY_MAX_BYTES - ENTRY_HEADER_BYTES - VALUE_ALIGN_BYTES;

/** The widest a value can be, in bytes; `unbounded` names what has no bound; `unknown` when there is no catalog. */
type Width = { bytes: number } | { unbounded: string } | { unknown: true };

/** Fixed-width built-in types by name (pg_type.typlen), and the ones of bounded variable width. */
const FIXED_BYTES: Readonly<Record<string, number>> = {
  bool: 1,
  boolean: 1,
  char: 1,
  int2: 2,
  smallint: 2,
  int4: 4,
  int: 4,
  integer: 4,
  int8: 8,
  bigint: 8,
  float4: 4,
  real: 4,
  float8: 8,
  date: 4,
  time: 8,
  timetz: 12,
  timestamp: 8,
  timestamptz: 8,
  interval: 16,
  uuid: 16,
  money: 8,
  oid: 4,
  macaddr: 6,
  macaddr8: 8,
  point: 16,
  box: 32,
  lseg: 32,
  line: 24,
  circle: 24,
  inet: 24,
  cidr: 24,
  pg_lsn: 8,
};

/**
 * The widest value of a type (header included), from its name and type modifier as the catalog or a column
 * definition gives them: fixed-width types, `varchar(n)`/`char(n)` (n characters of at most 4 bytes), `numeric(p, s)`,
 * `bit(n)`/`varbit(n)`, ranges of a fixed-width subtype; `undefined` for every type without a bound (`text`, `bytea`,
 * `jsonb`, arrays, unconstrained `numeric`, ...).
 */
function typeMaxBytes(type: string, typmod: number | undefined, length?: number, rangeSubtypeLength?: number): number | undefined {
  if (length !== undefined && length > 0) return length;
  if (FIXED_BYTES[type] !== undefined) return FIXED_BYTES[type];
  const mod = typmod ?? -1;
  switch (type) {
    case 'varchar':
    case 'bpchar':
      return mod >= 4 ? (mod - 4) * 4 + 4 : undefined;
    case 'numeric': {
      // numeric(p, s): a header, a weight/sign word and one 2-byte word per 4 decimal digits, and one spare.
      const precision = mod >= 4 ? ((mod - 4) >> 16) & 0xffff : 0;
      return precision > 0 ? 8 + 2 * (Math.ceil(precision / 4) + 1) : undefined;
    }
    case 'bit':
    case 'varbit':
      return mod > 0 ? 8 + Math.ceil(mod / 8) : undefined;
    default:
      return rangeSubtypeLength !== undefined && rangeSubtypeLength > 0 ? 2 * rangeSubtypeLength + 16 : undefined;
  }
}

/** A GIN entry holds one element of the value: an array's element, a tsvector's lexeme, a jsonb key or value. */
function ginKeyBytes(facts: CoreColumnFacts): number | undefined {
  // tsvector lexemes are at most 2,047 bytes; jsonb_ops hashes strings longer than 125 bytes, jsonb_path_ops all.
  if (facts.type === 'tsvector') return 2_048;
  if (facts.type === 'jsonb') return 128;
  if (facts.elementLength !== undefined) return facts.elementLength > 0 ? facts.elementLength : undefined;
  return typeMaxBytes(facts.type, facts.typmod, facts.length, facts.rangeSubtypeLength);
}

/** A column the migration itself adds: its width from its declared type (an array, or a type of its own, has none). */
function declaredBytes(typeName: TypeName | undefined): number | undefined {
  if (!typeName || (typeName.arrayBounds ?? []).length > 0) return undefined;
  const names = namesOf(typeName.names);
  if (names.length === 2 && names[0] !== 'pg_catalog') return undefined;
  const mods = (typeName.typmods ?? []).map((m) => ('A_Const' in m ? m.A_Const.ival?.ival : undefined));
  if (mods.some((m) => m === undefined)) return undefined;
  const name = names[names.length - 1];
  // The modifier as PostgreSQL stores it: VARHDRSZ + n for character types, (p << 16 | s) + VARHDRSZ for numeric.
  const typmod =
    mods.length === 0 ? undefined : name === 'numeric' ? ((mods[0]! << 16) | (mods[1] ?? 0)) + 4 : name === 'bit' || name === 'varbit' ? mods[0] : mods[0]! + 4;
  const aliases: Record<string, string> = { character: 'bpchar', 'character varying': 'varchar', decimal: 'numeric' };
  return typeMaxBytes(aliases[name] ?? name, typmod);
}

/** What the judge knows of one core table's columns: the catalog's facts, and the columns this migration adds. */
interface TableColumns {
  catalog?: Readonly<Record<string, CoreColumnFacts>>;
  /** Column added by this migration → the widest value the application's inserts give it. */
  added: Map<string, number>;
  /** Column → the widest value an index's predicate lets into it (`WHERE status IN ('new', 'paid')`). */
  predicate?: Map<string, number>;
}

/** The catalog's facts of a present column (none without the catalog, or for a column it does not know). */
function catalogFacts(cols: TableColumns, name: string): CoreColumnFacts | undefined {
  return cols.catalog && Object.hasOwn(cols.catalog, name) ? cols.catalog[name] : undefined;
}

/**
 * What a partial index's predicate bounds: each conjunct `col = 'literal'` or `col IN ('literal', ...)` lets only
 * rows with one of those values into the index (under a deterministic collation: a nondeterministic one could find
 * a longer string equal).
 */
function predicateBounds(where: Node | undefined, cols: TableColumns): Map<string, number> {
  const bounds = new Map<string, number>();
  const conjuncts = where && 'BoolExpr' in where && where.BoolExpr.boolop === 'AND_EXPR' ? (where.BoolExpr.args ?? []) : where ? [where] : [];
  const literalBytes = (n: Node | undefined) => (n && 'A_Const' in n ? Buffer.byteLength(n.A_Const.sval?.sval ?? '') + 16 : undefined);
  for (const c of conjuncts) {
    if (!('A_Expr' in c)) continue;
    const e = c.A_Expr;
    let column: Node | undefined;
    let bytes: number | undefined;
    if (e.kind === 'AEXPR_OP' && namesOf(e.name).join('.') === '=') {
      [column, bytes] = e.lexpr && 'ColumnRef' in e.lexpr ? [e.lexpr, literalBytes(e.rexpr)] : [e.rexpr, literalBytes(e.lexpr)];
    } else if (e.kind === 'AEXPR_IN' && namesOf(e.name).join('.') === '=' && e.rexpr && 'List' in e.rexpr) {
      const each = (e.rexpr.List.items ?? []).map(literalBytes);
      [column, bytes] = [e.lexpr, each.some((b) => b === undefined) ? undefined : Math.max(0, ...(each as number[]))];
    }
    if (!column || !('ColumnRef' in column) || bytes === undefined) continue;
    const name = namesOf(column.ColumnRef.fields).pop() ?? '';
    if (catalogFacts(cols, name)?.nondeterministic) continue;
    bounds.set(name, Math.min(bytes, bounds.get(name) ?? Infinity));
  }
  return bounds;
}

/**
 * The widest value the application's writes can put in a column. Its own columns: as wide as their type allows (or
 * as an index of its own already bounds them). An agent column: the application's inserts never name it and give it
 * its DEFAULT (a literal or a time value, core-default), or NULL; what the agent's tools write is theirs to fit.
 */
function columnWidth(name: string, cols: TableColumns, gin: boolean): Width {
  const allowed = cols.predicate?.get(name);
  if (allowed !== undefined) return { bytes: allowed };
  const added = cols.added.get(name);
  if (added !== undefined) return { bytes: added };
  const facts = catalogFacts(cols, name);
  if (!facts) return { unknown: true };
  const typed = gin ? ginKeyBytes(facts) : typeMaxBytes(facts.type, facts.typmod, facts.length, facts.rangeSubtypeLength);
  if (facts.defaultBytes !== undefined) return { bytes: Math.min(typed ?? Infinity, facts.defaultBytes + 4) };
  if (typed !== undefined) return { bytes: facts.appIndexed ? Math.min(typed, APP_INDEXED_BYTES) : typed };
  if (facts.appIndexed) return { bytes: APP_INDEXED_BYTES };
  return { unbounded: `column ${showIdent(name)} (${facts.type}, of no bounded width)` };
}

/** A column this migration adds to a core table: the width of its DEFAULT (0, NULL, without one), or of its type. */
function addedColumnBytes(def: ColumnDef): number {
  const declared = declaredBytes(def.typeName);
  const raw = (def.constraints ?? []).flatMap((c) =>
    'Constraint' in c && c.Constraint.contype === 'CONSTR_DEFAULT' && c.Constraint.raw_expr ? [c.Constraint.raw_expr] : [],
  )[0];
  const value = raw ? expressionWidth(raw, { added: new Map() }) : { bytes: 0 };
  return Math.min(declared ?? Infinity, 'bytes' in value ? value.bytes : Infinity);
}

const widest = (widths: Width[]): Width => {
  for (const w of widths) if ('unbounded' in w) return w;
  for (const w of widths) if ('unknown' in w) return w;
  return { bytes: Math.max(0, ...widths.map((w) => ('bytes' in w ? w.bytes : 0))) };
};

const COMPARISONS = new Set(['=', '<>', '!=', '<', '<=', '>', '>=']);
const SAME_WIDTH = new Set(['lower', 'upper', 'initcap', 'btrim', 'ltrim', 'rtrim', 'trim']);
/** Functions whose result is a number, a date/time value or a short name (the time values of a core DEFAULT too). */
const FIXED_RESULT = new Set([
  'char_length',
  'character_length',
  'octet_length',
  'date_trunc',
  'timezone',
  'jsonb_typeof',
  'json_typeof',
  'now',
  'transaction_timestamp',
  'statement_timestamp',
]);

/**
 * The widest value of an index expression the core-index-expression rule accepted (it ran first): only columns,
 * literals, comparisons, CASE/coalesce/nullif/greatest/least, COLLATE, `->`/`->>` and the total functions are left.
 */
function expressionWidth(node: Node, cols: TableColumns): Width {
  if ('ColumnRef' in node) {
    const fields = namesOf(node.ColumnRef.fields);
    return columnWidth(fields[fields.length - 1] ?? '', cols, false);
  }
  if ('A_Const' in node) {
    const c = node.A_Const;
    return { bytes: c.sval ? Buffer.byteLength(c.sval.sval ?? '') + 4 : 16 };
  }
  if ('TypeCast' in node) {
    const declared = declaredBytes(node.TypeCast.typeName);
    return declared !== undefined ? { bytes: declared } : node.TypeCast.arg ? expressionWidth(node.TypeCast.arg, cols) : { bytes: 16 };
  }
  if ('CollateClause' in node) return node.CollateClause.arg ? expressionWidth(node.CollateClause.arg, cols) : { bytes: 0 };
  if ('BoolExpr' in node || 'NullTest' in node || 'BooleanTest' in node) return { bytes: 1 };
  if ('SQLValueFunction' in node) return { bytes: 16 }; // CURRENT_TIMESTAMP, CURRENT_DATE, LOCALTIMESTAMP, ...
  if ('CoalesceExpr' in node) return widest((node.CoalesceExpr.args ?? []).map((a) => expressionWidth(a, cols)));
  if ('MinMaxExpr' in node) return widest((node.MinMaxExpr.args ?? []).map((a) => expressionWidth(a, cols)));
  if ('CaseExpr' in node) {
    const results = (node.CaseExpr.args ?? []).flatMap((w) => ('CaseWhen' in w && w.CaseWhen.result ? [w.CaseWhen.result] : []));
    if (node.CaseExpr.defresult) results.push(node.CaseExpr.defresult);
    return widest(results.map((r) => expressionWidth(r, cols)));
  }
  if ('A_Expr' in node) {
    const e = node.A_Expr;
    const op = namesOf(e.name).join('.');
    if (e.kind === 'AEXPR_NULLIF' && e.lexpr) return expressionWidth(e.lexpr, cols);
    if (e.kind === 'AEXPR_OP' && !COMPARISONS.has(op) && op !== '->' && op !== '->>') return { unbounded: `the operator ${op}` };
    if ((op === '->' || op === '->>') && e.lexpr) {
      // A part of a JSON value, as jsonb or as text: no wider than twice the whole (text escapes at most double it).
      const whole = expressionWidth(e.lexpr, cols);
      return 'bytes' in whole ? { bytes: 2 * whole.bytes + 16 } : whole;
    }
    return { bytes: 1 }; // a comparison: a boolean
  }
  if ('FuncCall' in node) {
    const name = namesOf(node.FuncCall.funcname).pop() ?? '';
    const args = node.FuncCall.args ?? [];
    if (SAME_WIDTH.has(name) && args[0]) return expressionWidth(args[0], cols);
    if ((name === 'left' || name === 'right') && args[0] && args[1] && 'A_Const' in args[1]) {
      const n = args[1].A_Const.ival?.ival ?? 0;
      const of = expressionWidth(args[0], cols);
      if (n < 0) return of; // all but the last (first) -n characters
      return 'bytes' in of ? { bytes: Math.min(of.bytes, 4 * n + 4) } : { bytes: 4 * n + 4 };
    }
    if (FIXED_RESULT.has(name)) {
      return { bytes: 16 };
    }
    return { unbounded: `${name}(...)` };
  }
  return { unbounded: 'an expression of no known width' };
}

function elementWidth(elem: IndexElem, cols: TableColumns, gin: boolean): Width {
  if (elem.name !== undefined) return columnWidth(elem.name, cols, gin);
  return elem.expr ? expressionWidth(elem.expr, cols) : { bytes: 0 };
}

/**
 * The `core-index-width` verdicts of a migration: walking the statements in order (so a column added earlier in it is
 * known by its declared type), an index on a core table whose entry could be wider than PostgreSQL takes gets a
 * refusal: the application's later write of a long value would fail with 54000. Without the catalog (`forge
 * lint-sql`), a core table's present columns are of unknown width and such an index is not judged here.
 */
export function indexWidthVerdicts(nodes: (Node | undefined)[], coreTables: CoreTablesUsage | undefined): (Verdict | undefined)[] {
  const tables = new Map<string, TableColumns>();
  const of = (table: string): TableColumns => {
    let t = tables.get(table);
    if (!t) {
      const catalog = coreTables && Object.hasOwn(coreTables, table) ? coreTables[table].columns : undefined;
      tables.set(table, (t = { catalog, added: new Map() }));
    }
    return t;
  };
  return nodes.map((node) => {
    if (!node) return undefined;
    if ('AlterTableStmt' in node) {
      const table = node.AlterTableStmt.relation?.relname;
      if (table === undefined || isAgentName(table)) return undefined;
      for (const cmd of node.AlterTableStmt.cmds ?? []) {
        const def = 'AlterTableCmd' in cmd && cmd.AlterTableCmd.subtype === 'AT_AddColumn' ? cmd.AlterTableCmd.def : undefined;
        if (def && 'ColumnDef' in def && def.ColumnDef.colname) of(table).added.set(def.ColumnDef.colname, addedColumnBytes(def.ColumnDef));
      }
      return undefined;
    }
    if (!('IndexStmt' in node)) return undefined;
    const s = node.IndexStmt;
    const table = s.relation?.relname;
    const method = s.accessMethod ?? 'btree';
    if (table === undefined || isAgentName(table) || method === 'hash') return undefined;
    const cols = { ...of(table), predicate: predicateBounds(s.whereClause, of(table)) };
    const elems = [...(s.indexParams ?? []), ...(s.indexIncludingParams ?? [])].flatMap((p) => ('IndexElem' in p ? [p.IndexElem] : []));
    // A BRIN summary holds two values of each column (its least and greatest).
    const copies = method === 'brin' ? 2 : 1;
    const widths = elems.map((elem) => elementWidth(elem, cols, method === 'gin'));
    const unbounded = widths.find((w) => 'unbounded' in w);
    if (unbounded && 'unbounded' in unbounded) return tooWide(s.idxname ?? '', table, method, `${unbounded.unbounded} has no bound`);
    // Without the catalog a present column counts nothing: what is known may already be too wide.
    const total = widths.reduce((sum, w) => sum + ('bytes' in w ? copies * (w.bytes + VALUE_ALIGN_BYTES) : 0), ENTRY_HEADER_BYTES);
    if (total > INDEX_ENTRY_MAX_BYTES) {
      return tooWide(s.idxname ?? '', table, method, `its values together can take ${total} bytes`);
    }
    return undefined;
  });
}

function tooWide(index: string, table: string, method: string, why: string): Verdict {
  return reject(
    'core-index-width',
    `Index ${showIdent(index)} on core table ${showIdent(table)} (${method}) could get entries wider than the ` +
      `${INDEX_ENTRY_MAX_BYTES} bytes PostgreSQL stores in one: ${why}. The application's next write of a long ` +
      'value would then fail (index row size exceeds the maximum) where it succeeds today. Index a bounded prefix ' +
      `(CREATE INDEX ${showIdent(index)} ON ${showIdent(table)} ((left(col, 200)))), use USING hash for equality ` +
      'lookups, or index columns of bounded width (varchar(n), numbers, dates).',
  );
}
