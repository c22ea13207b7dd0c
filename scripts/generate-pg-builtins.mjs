#!/usr/bin/env node
// Generates src/policy/data/pg-builtins.json: which PostgreSQL built-in functions and operators an agent migration's
// expressions may use (SCHEMA_POLICY.md "Expressions"). Read from PostgreSQL's own catalogue (pg_proc, pg_operator of
// the embedded PGlite, the same major version as the policy's parser), never typed by hand:
//
//   node scripts/generate-pg-builtins.mjs        # rewrites the data file
//   node scripts/generate-pg-builtins.mjs --check  # exits 1 when the checked-in file differs (run by the tests)
//
// A function name is allowed when EVERY pg_catalog overload of it is immutable or stable AND parallel safe (the
// catalogue's own statement that it changes no state, takes no locks, touches no session or temporary objects),
// and it is not on the deny list below. Overloads are judged together because the policy sees names, not the types
// PostgreSQL would resolve. A few functions that only produce values are allowed by name (VALUES_ONLY);
// nextval is allowed only on agent_ sequences, a rule of its own in the policy.
import { writeFileSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { PGlite } from '@electric-sql/pglite';

const OUT = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'src', 'policy', 'data', 'pg-builtins.json');

/**
 * Refused by the catalogue's test but allowed by name: volatile only because each call gives a new value, or (age)
 * parallel restricted only because it reads the transaction's start date. Nothing is read or written but the value.
 */
const VALUES_ONLY = ['age', 'gen_random_uuid', 'uuidv4', 'uuidv7', 'random', 'random_normal', 'clock_timestamp', 'timeofday'];

/**
 * Known actors, denied whatever the catalogue says of them now or in a later version: they run SQL text, read or
 * write server files, signal or block sessions, change settings, sequences, large objects or the WAL, notify.
 */
const DENY = [
  'set_config',
  'current_setting',
  'setval',
  'currval',
  'lastval',
  'nextval',
  'setseed',
  'pg_notify',
  'pg_sleep',
  'pg_sleep_for',
  'pg_sleep_until',
  'pg_terminate_backend',
  'pg_cancel_backend',
  'pg_reload_conf',
  'pg_rotate_logfile',
  'pg_log_backend_memory_contexts',
  'pg_read_file',
  'pg_read_binary_file',
  'pg_ls_dir',
  'pg_stat_file',
  'pg_file_write',
  'pg_file_unlink',
  'pg_ls_logdir',
  'pg_ls_waldir',
  'pg_ls_tmpdir',
  'pg_ls_archive_statusdir',
  'pg_ls_logicalsnapdir',
  'pg_ls_logicalmapdir',
  'pg_ls_replslotdir',
  'pg_ls_summariesdir',
  'lo_import',
  'lo_export',
  'lo_create',
  'lo_creat',
  'lo_unlink',
  'lo_from_bytea',
  'lo_put',
  'lo_get',
  'lo_open',
  'lo_close',
  'lo_truncate',
  'lo_truncate64',
  'lo_lseek',
  'lo_lseek64',
  'lo_tell',
  'lo_tell64',
  'loread',
  'lowrite',
  'query_to_xml',
  'query_to_xmlschema',
  'query_to_xml_and_xmlschema',
  'cursor_to_xml',
  'cursor_to_xmlschema',
  'table_to_xml',
  'table_to_xmlschema',
  'table_to_xml_and_xmlschema',
  'schema_to_xml',
  'schema_to_xmlschema',
  'schema_to_xml_and_xmlschema',
  'database_to_xml',
  'database_to_xmlschema',
  'database_to_xml_and_xmlschema',
  'ts_stat',
  'txid_current',
  'txid_current_if_assigned',
  'pg_current_xact_id',
  'pg_current_xact_id_if_assigned',
  'pg_create_restore_point',
  'pg_switch_wal',
  'pg_logical_emit_message',
  'pg_backup_start',
  'pg_backup_stop',
  'pg_promote',
  'pg_wal_replay_pause',
  'pg_wal_replay_resume',
  'pg_export_snapshot',
  'pg_import_system_collations',
  'pg_stat_reset',
  'pg_stat_reset_shared',
  'pg_stat_reset_single_table_counters',
  'pg_stat_reset_slru',
  'pg_replication_origin_create',
  'pg_create_physical_replication_slot',
  'pg_create_logical_replication_slot',
  'pg_drop_replication_slot',
  'pg_advisory_lock',
  'pg_advisory_lock_shared',
  'pg_advisory_xact_lock',
  'pg_advisory_xact_lock_shared',
  'pg_try_advisory_lock',
  'pg_try_advisory_lock_shared',
  'pg_try_advisory_xact_lock',
  'pg_try_advisory_xact_lock_shared',
  'pg_advisory_unlock',
  'pg_advisory_unlock_shared',
  'pg_advisory_unlock_all',
  'dblink',
  'dblink_exec',
  'dblink_connect',
  'dblink_send_query',
];

/**
 * Readers, refused whatever their volatility says (SCHEMA_POLICY.md "Round three", reading): they answer from the
 * catalogs, the settings, the roles, the server's files or other sessions, not from their arguments. An expression
 * of a migration may compute only from the row and the literals it is given. `stable` is PostgreSQL's word on caching
 * (pg_get_functiondef is stable), not on what a function may read; the list is curated by what each function does.
 */
const READS = [
  /^pg_get_/, // definitions, roles, keywords, ACLs, slots: pg_get_functiondef, pg_get_userbyid, pg_get_viewdef, ...
  /^has_.*_privilege$/,
  /^pg_has_role$/, // who may do what
  /^pg_show_/,
  /^pg_settings_get_flags$/,
  /^pg_config$/,
  /^pg_options_to_table$/, // settings
  /^pg_stat_/,
  /^pg_(database|relation|table|indexes|total_relation|tablespace)_size$/, // statistics and sizes
  /_is_visible$/,
  /^pg_is_other_temp_schema$/,
  /^pg_my_temp_schema$/,
  /^current_schemas$/, // the search path
  /^pg_relation_file(path|node)$/,
  /^pg_filenode_relation$/,
  /^pg_tablespace_(location|databases)$/, // files
  /^pg_(describe|identify)_object/,
  /^(obj|col|shobj)_description$/,
  /^format_type$/,
  /^to_reg/, // the catalogs
  /^pg_(column|relation)_is_updatable$/,
  /^pg_relation_is_publishable$/,
  /^pg_partition_(root|tree|ancestors)$/,
  /^pg_sequence_(parameters|last_value)$/,
  /^pg_(index|index_column|indexam)_has_property$/,
  /^pg_(postmaster_start|conf_load)_time$/,
  /^pg_current_logfile$/,
  /^version$/,
  /^pg_numa_/, // the server
  /^inet_(server|client)_(addr|port)$/,
  /^pg_control_/,
  /^pg_(current|last)_wal_/,
  /^pg_walfile_name/,
  /^pg_is_in_recovery$/,
  /^pg_is_wal_replay_paused$/,
  /^pg_available_extension/,
  /^pg_timezone_(names|abbrevs)/,
  /^pg_(collation|database_collation)_actual_version$/,
  /^pg_jit_available$/,
  /^pg_replication_origin_/,
  /^pg_(backend_pid|blocking_pids|safe_snapshot_blocking_pids)$/,
  /^pg_(listening_channels|notification_queue_usage)$/,
  /^pg_(cursor|prepared_statement|prepared_xact|lock_status|hba_file_rules|ident_file_mappings)$/, // other sessions
  /^txid_current_snapshot$/,
  /^pg_current_snapshot$/,
  /^pg_last_committed_xact$/,
  /^pg_xact_(status|commit_timestamp)/,
  /^txid_status$/,
  /^pg_event_trigger_/,
  /^pg_trigger_depth$/,
];

async function generate() {
  const db = new PGlite();
  try {
    const [{ version }] = (await db.query('SELECT version()')).rows;
    const procs = (
      await db.query(
        `SELECT p.proname AS name, p.provolatile AS volatility, p.proparallel AS parallel
           FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
          WHERE n.nspname = 'pg_catalog' AND p.prokind IN ('f', 'a', 'w')`,
      )
    ).rows;
    const ops = (
      await db.query(
        `SELECT o.oprname AS name, p.proname AS fn, p.provolatile AS volatility, p.proparallel AS parallel
           FROM pg_operator o JOIN pg_namespace n ON n.oid = o.oprnamespace
           LEFT JOIN pg_proc p ON p.oid = o.oprcode
          WHERE n.nspname = 'pg_catalog'`,
      )
    ).rows;
    const deny = new Set(DENY);
    const valuesOnly = new Set(VALUES_ONLY);
    /** name → why it is refused ('volatile', 'parallel-unsafe', 'parallel-restricted', 'deny-list', 'reads'); absent: allowed. */
    const refused = new Map();
    const names = new Set();
    const notImmutable = new Set();
    for (const p of procs) {
      names.add(p.name);
      if (p.volatility !== 'i') notImmutable.add(p.name);
      const reason = deny.has(p.name)
        ? 'deny-list'
        : READS.some((re) => re.test(p.name))
          ? 'reads'
          : valuesOnly.has(p.name)
            ? undefined
            : p.volatility === 'v'
              ? 'volatile'
              : p.parallel === 'u'
                ? 'parallel-unsafe'
                : p.parallel === 'r'
                  ? 'parallel-restricted'
                  : undefined;
      if (reason && !refused.has(p.name)) refused.set(p.name, reason);
    }
    for (const name of DENY) if (!names.has(name)) refused.set(name, 'deny-list'); // not built in (dblink): still named
    const functions = [...names].filter((n) => !refused.has(n)).sort();
    const operatorRefused = new Set();
    const operatorNames = new Set();
    for (const o of ops) {
      operatorNames.add(o.name);
      const fnAllowed = o.fn !== null && functions.includes(o.fn);
      const safeCode = o.fn !== null && o.volatility !== 'v' && o.parallel === 's';
      if (!fnAllowed && !safeCode) operatorRefused.add(o.name);
    }
    return {
      generatedBy: 'scripts/generate-pg-builtins.mjs',
      generatedFrom: version.split(' on ')[0],
      functions,
      // A CHECK on a core table may call only these: its verdict on a row must never change later.
      immutableFunctions: functions.filter((n) => !notImmutable.has(n)),
      refusedFunctions: Object.fromEntries([...refused].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))),
      operators: [...operatorNames].filter((n) => !operatorRefused.has(n)).sort(),
    };
  } finally {
    await db.close();
  }
}

const data = `${JSON.stringify(await generate(), null, 1)}\n`;
if (process.argv.includes('--check')) {
  let current = '';
  try {
    current = readFileSync(OUT, 'utf8');
  } catch {
    // missing: differs
  }
  if (current !== data) {
    process.stderr.write(`${OUT} is not what the catalogue gives: run node scripts/generate-pg-builtins.mjs\n`);
    process.exit(1);
  }
} else {
  writeFileSync(OUT, data);
  process.stderr.write(`wrote ${OUT}\n`);
}
