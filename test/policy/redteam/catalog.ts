/**
 * The catalog fingerprint of the differential test (differential.test.ts): one SQL query that lists every object of
 * the database, in every schema except pg_toast and the temporary ones, with its definition, and says which objects
 * are the agent's (SCHEMA_POLICY.md "Names") so that only the rest is compared.
 *
 * An object is the agent's when its own name starts with `agent_`, or PostgreSQL named it itself for an agent column
 * (`users_agent_code_key`, `users_agent_id_seq`), or it lives inside an agent object (a column, constraint, default,
 * internal trigger, view rule or type constructor of an agent table or type). Forge's own tables
 * (`tool_versions`, ..., the tracking table) are never the agent's, whatever their names, nor is anything on them.
 * Everything else — including a trigger, rule, policy, function, operator, schema or statistics object that happens
 * to be named `agent_` — is compared.
 *
 * Built-in objects (oid < 16384, created by initdb) are compared as one hash per group; the test keeps their rows
 * from the start and lists them only when a hash moves.
 *
 * Parameters: $1 the schema Forge and the agent share, $2 the names of Forge's tables in it.
 */

/** oid below which objects were made by initdb (FirstNormalObjectId). */
const FIRST_NORMAL_OID = 16384;

/** `name` looks like a name PostgreSQL chose for something on an agent column of `tbl` (`users_agent_code_key`). */
function autoNamed(name: string, tbl: string): string {
  return `(strpos(${name}, '_agent_') > 1 AND starts_with(${tbl}, left(${name}, strpos(${name}, '_agent_') - 1)))`;
}

/** Every column of `rel.oid` in `keys` (an int2[] of attnums) is an agent column. */
function allAgentColumns(relOid: string, keys: string): string {
  return `(cardinality(${keys}) > 0 AND 0 <> ALL (${keys}) AND NOT EXISTS (
    SELECT 1 FROM unnest(${keys}) k(attnum)
    WHERE NOT EXISTS (SELECT 1 FROM agent_col ac WHERE ac.attrelid = ${relOid} AND ac.attnum = k.attnum)))`;
}

const CLASSIFY = `
nsp AS (
  SELECT n.oid, n.nspname,
         n.nspname IN ('pg_catalog', 'information_schema') AS sys,
         (n.nspname = 'pg_toast' OR n.nspname ~ '^pg_(toast_)?temp_') AS skip
  FROM pg_namespace n
),
rel AS (
  SELECT c.oid, c.relname, c.relkind, c.relnamespace, n.nspname, n.sys, format('%I.%I', n.nspname, c.relname) AS qname
  FROM pg_class c JOIN nsp n ON n.oid = c.relnamespace
  WHERE NOT n.skip AND c.oid >= ${FIRST_NORMAL_OID}
),
forge_rel AS (
  SELECT oid FROM rel WHERE nspname = $1 AND relname = ANY ($2::text[]) AND relkind IN ('r', 'p')
),
-- Forge's tables, their indexes and the sequences they own: never the agent's, whatever their names.
forge_attached AS (
  SELECT oid FROM forge_rel
  UNION SELECT i.indexrelid FROM pg_index i WHERE i.indrelid IN (SELECT oid FROM forge_rel)
  UNION SELECT d.objid FROM pg_depend d
        WHERE d.classid = 'pg_class'::regclass AND d.refclassid = 'pg_class'::regclass
          AND d.deptype IN ('a', 'i') AND d.refobjid IN (SELECT oid FROM forge_rel)
),
agent_rel0 AS (
  SELECT oid FROM rel
  WHERE NOT sys AND relname LIKE 'agent\\_%' AND oid NOT IN (SELECT oid FROM forge_attached)
),
-- Every column of an agent relation; agent_ columns of any other relation but Forge's.
agent_col AS (
  SELECT a.attrelid, a.attnum FROM pg_attribute a JOIN rel r ON r.oid = a.attrelid
  WHERE a.attnum > 0 AND NOT r.sys
    AND (r.oid IN (SELECT oid FROM agent_rel0)
         OR (a.attname LIKE 'agent\\_%' AND r.oid NOT IN (SELECT oid FROM forge_attached)))
),
-- Sequences and indexes PostgreSQL made and named for agent columns of a core table.
auto_rel AS (
  SELECT s.oid FROM rel s
    JOIN pg_depend d ON d.classid = 'pg_class'::regclass AND d.objid = s.oid AND d.refclassid = 'pg_class'::regclass
                    AND d.deptype IN ('a', 'i') AND d.refobjsubid > 0
    JOIN agent_col ac ON ac.attrelid = d.refobjid AND ac.attnum = d.refobjsubid
    JOIN rel t ON t.oid = d.refobjid
  WHERE s.relkind = 'S' AND ${autoNamed('s.relname', 't.relname')}
  UNION
  SELECT i.indexrelid FROM pg_index i JOIN rel ic ON ic.oid = i.indexrelid JOIN rel t ON t.oid = i.indrelid
  WHERE i.indrelid NOT IN (SELECT oid FROM forge_attached) AND i.indexprs IS NULL
    AND ${autoNamed('ic.relname', 't.relname')} AND ${allAgentColumns('i.indrelid', 'i.indkey::int2[]')}
),
agent_rel AS (SELECT oid FROM agent_rel0 UNION SELECT oid FROM auto_rel),
agent_type0 AS (
  SELECT t.oid FROM pg_type t JOIN nsp n ON n.oid = t.typnamespace
  WHERE NOT n.sys AND NOT n.skip
    AND ((t.typrelid = 0 AND t.typname LIKE 'agent\\_%') OR t.typrelid IN (SELECT oid FROM agent_rel))
),
agent_type AS (
  SELECT oid FROM agent_type0
  UNION SELECT t.typarray FROM pg_type t WHERE t.oid IN (SELECT oid FROM agent_type0) AND t.typarray <> 0
),
-- Constraints of agent tables and domains; on other tables (not Forge's) those named agent_ or named by
-- PostgreSQL for agent columns only.
agent_con AS (
  SELECT c.oid FROM pg_constraint c LEFT JOIN rel r ON r.oid = c.conrelid
  WHERE (c.conrelid <> 0 AND c.conrelid IN (SELECT oid FROM agent_rel))
     OR (c.contypid <> 0 AND c.contypid IN (SELECT oid FROM agent_type))
     OR (c.conrelid <> 0 AND NOT r.sys AND c.conrelid NOT IN (SELECT oid FROM forge_attached)
         AND (c.conname LIKE 'agent\\_%'
              OR ((${autoNamed('c.conname', 'r.relname')} OR (starts_with(c.conname, r.relname || '_') AND substr(c.conname, length(r.relname) + 2) ~ '^(check|fkey|key|excl)[0-9]*$'))
                  AND ${allAgentColumns('c.conrelid', "coalesce(c.conkey, '{}')")})))
),
-- Constructors of agent range and multirange types.
agent_proc AS (
  SELECT p.oid FROM pg_proc p
  WHERE p.proname LIKE 'agent\\_%' AND EXISTS (
    SELECT 1 FROM pg_depend d
    WHERE d.classid = 'pg_proc'::regclass AND d.objid = p.oid AND d.refclassid = 'pg_type'::regclass
      AND d.deptype = 'i' AND d.refobjid IN (SELECT oid FROM agent_type))
)`;

const OBJECTS = `
objects AS (
  SELECT 'schema' AS grp, false AS agent, quote_ident(n.nspname) AS key,
         concat_ws(' | ', 'owner=' || pg_get_userbyid(x.nspowner), 'acl=' || x.nspacl::text,
                   'comment=' || obj_description(n.oid, 'pg_namespace')) AS def
  FROM nsp n JOIN pg_namespace x ON x.oid = n.oid
  WHERE NOT n.skip

  UNION ALL
  SELECT 'relation', r.oid IN (SELECT oid FROM agent_rel), r.qname,
    concat_ws(' | ',
      'kind=' || c.relkind::text, 'owner=' || pg_get_userbyid(c.relowner), 'acl=' || c.relacl::text,
      'persistence=' || c.relpersistence::text, 'options=' || c.reloptions::text, 'am=' || am.amname,
      'tablespace=' || nullif(c.reltablespace, 0)::text,
      'rls=' || c.relrowsecurity::text || '/' || c.relforcerowsecurity::text, 'replica-identity=' || c.relreplident::text,
      'partition-bound=' || pg_get_expr(c.relpartbound, c.oid),
      nullif(concat_ws(' | ',
        'inherits=' || (SELECT string_agg(i.inhparent::regclass::text, ',' ORDER BY i.inhseqno)
                        FROM pg_inherits i WHERE i.inhrelid = c.oid),
        'partition-key=' || CASE WHEN c.relkind = 'p' THEN pg_get_partkeydef(c.oid) END,
        'view=' || CASE WHEN c.relkind IN ('v', 'm') THEN pg_get_viewdef(c.oid) END,
        'index=' || (SELECT pg_get_indexdef(i.indexrelid) || ' clustered=' || i.indisclustered
                            || ' replica-identity=' || i.indisreplident || ' valid=' || i.indisvalid
                     FROM pg_index i WHERE i.indexrelid = c.oid),
        'sequence=' || (SELECT concat_ws(',', format_type(s.seqtypid, NULL), s.seqstart, s.seqincrement, s.seqmin,
                                         s.seqmax, s.seqcache, s.seqcycle)
                        FROM pg_sequence s WHERE s.seqrelid = c.oid),
        'owned-by=' || CASE WHEN c.relkind = 'S' THEN
          (SELECT string_agg(format('%s.%I (%s)', d.refobjid::regclass, a.attname, d.deptype), ',')
           FROM pg_depend d JOIN pg_attribute a ON a.attrelid = d.refobjid AND a.attnum = d.refobjsubid
           WHERE d.classid = 'pg_class'::regclass AND d.objid = c.oid AND d.refclassid = 'pg_class'::regclass
             AND d.deptype IN ('a', 'i')) END,
        'foreign=' || (SELECT f.ftserver::text || ' ' || coalesce(f.ftoptions::text, '')
                       FROM pg_foreign_table f WHERE f.ftrelid = c.oid)), ''),
      'comment=' || obj_description(c.oid, 'pg_class'))
  FROM rel r JOIN pg_class c ON c.oid = r.oid LEFT JOIN pg_am am ON am.oid = c.relam

  UNION ALL
  SELECT 'column',
         r.oid IN (SELECT oid FROM agent_rel)
           OR EXISTS (SELECT 1 FROM agent_col ac WHERE ac.attrelid = a.attrelid AND ac.attnum = a.attnum),
         r.qname || '.' || quote_ident(a.attname),
    concat_ws(' | ',
      'position=' || a.attnum, 'type=' || format_type(a.atttypid, a.atttypmod), 'not-null=' || a.attnotnull,
      'default=' || pg_get_expr(ad.adbin, ad.adrelid), 'identity=' || nullif(a.attidentity::text, ''),
      'generated=' || nullif(a.attgenerated::text, ''),
      'collation=' || CASE WHEN a.attcollation <> t.typcollation THEN a.attcollation::regcollation::text END,
      'acl=' || a.attacl::text, 'storage=' || a.attstorage::text, 'statistics=' || a.attstattarget,
      'compression=' || nullif(a.attcompression::text, ''), 'options=' || a.attoptions::text,
      'fdw-options=' || a.attfdwoptions::text, 'comment=' || col_description(a.attrelid, a.attnum))
  FROM pg_attribute a JOIN rel r ON r.oid = a.attrelid JOIN pg_type t ON t.oid = a.atttypid
  LEFT JOIN pg_attrdef ad ON ad.adrelid = a.attrelid AND ad.adnum = a.attnum
  WHERE a.attnum > 0 AND NOT a.attisdropped AND r.relkind NOT IN ('i', 'I')

  UNION ALL
  SELECT 'constraint', c.oid IN (SELECT oid FROM agent_con),
    CASE WHEN c.conrelid <> 0 THEN c.conrelid::regclass::text ELSE 'domain ' || c.contypid::regtype::text END
      || '.' || quote_ident(c.conname),
    concat_ws(' | ', pg_get_constraintdef(c.oid), 'validated=' || c.convalidated,
      'local=' || c.conislocal || '/' || c.coninhcount, 'no-inherit=' || c.connoinherit,
      'index=' || nullif(c.conindid, 0)::regclass::text, 'comment=' || obj_description(c.oid, 'pg_constraint'))
  FROM pg_constraint c JOIN nsp n ON n.oid = c.connamespace
  WHERE NOT n.skip AND c.oid >= ${FIRST_NORMAL_OID}

  UNION ALL
  SELECT 'trigger', t.tgisinternal AND t.tgconstraint IN (SELECT oid FROM agent_con),
    r.qname || '.' || quote_ident(t.tgname),
    concat_ws(' | ', pg_get_triggerdef(t.oid), 'enabled=' || t.tgenabled::text, 'internal=' || t.tgisinternal,
      'constraint=' || (SELECT c.conname FROM pg_constraint c WHERE c.oid = t.tgconstraint),
      'comment=' || obj_description(t.oid, 'pg_trigger'))
  FROM pg_trigger t JOIN rel r ON r.oid = t.tgrelid

  UNION ALL
  SELECT 'rule', w.rulename = '_RETURN' AND w.ev_class IN (SELECT oid FROM agent_rel),
    r.qname || '.' || quote_ident(w.rulename),
    concat_ws(' | ', 'event=' || w.ev_type::text, 'enabled=' || w.ev_enabled::text, 'instead=' || w.is_instead,
      CASE WHEN w.rulename <> '_RETURN' THEN pg_get_ruledef(w.oid) END,
      'comment=' || obj_description(w.oid, 'pg_rewrite'))
  FROM pg_rewrite w JOIN rel r ON r.oid = w.ev_class

  UNION ALL
  SELECT 'policy', false, r.qname || '.' || quote_ident(p.polname),
    concat_ws(' | ', 'command=' || p.polcmd::text, 'permissive=' || p.polpermissive, 'roles=' || p.polroles::text,
      'using=' || pg_get_expr(p.polqual, p.polrelid), 'check=' || pg_get_expr(p.polwithcheck, p.polrelid))
  FROM pg_policy p JOIN rel r ON r.oid = p.polrelid

  UNION ALL
  SELECT 'type', t.oid IN (SELECT oid FROM agent_type), format('%I.%I', n.nspname, t.typname),
    concat_ws(' | ', 'kind=' || t.typtype::text, 'owner=' || pg_get_userbyid(t.typowner), 'acl=' || t.typacl::text,
      nullif(concat_ws(' | ',
        'relation=' || nullif(t.typrelid, 0)::regclass::text,
        'element=' || nullif(t.typelem, 0)::regtype::text,
        'base=' || CASE WHEN t.typbasetype <> 0 THEN format_type(t.typbasetype, t.typtypmod) END,
        'not-null=' || t.typnotnull, 'default=' || t.typdefault,
        'collation=' || nullif(t.typcollation, 0)::regcollation::text,
        'labels=' || (SELECT string_agg(e.enumlabel, ',' ORDER BY e.enumsortorder) FROM pg_enum e WHERE e.enumtypid = t.oid),
        'range=' || (SELECT concat_ws(',', g.rngsubtype::regtype, g.rngmultitypid::regtype, g.rngsubopc, g.rngcollation,
                                      g.rngcanonical, g.rngsubdiff)
                     FROM pg_range g WHERE g.rngtypid = t.oid),
        'io=' || concat_ws(',', t.typinput, t.typoutput, t.typreceive, t.typsend, t.typmodin, t.typmodout,
                           t.typanalyze, t.typsubscript)), ''),
      'comment=' || obj_description(t.oid, 'pg_type'))
  FROM pg_type t JOIN nsp n ON n.oid = t.typnamespace
  WHERE NOT n.skip AND t.oid >= ${FIRST_NORMAL_OID}

  UNION ALL
  SELECT 'function', p.oid IN (SELECT oid FROM agent_proc),
    format('%I.%I(%s)', n.nspname, p.proname, pg_get_function_identity_arguments(p.oid)),
    concat_ws(' | ', 'owner=' || pg_get_userbyid(p.proowner), 'acl=' || p.proacl::text,
 concat_ws(' | ', 'kind=' || p.prokind::text, 'language=' || p.prolang,
        'returns=' || pg_get_function_result(p.oid), 'volatility=' || p.provolatile::text, 'security-definer=' || p.prosecdef,
        'strict=' || p.proisstrict, 'leakproof=' || p.proleakproof, 'parallel=' || p.proparallel::text,
        'config=' || p.proconfig::text, 'source-md5=' || md5(p.prosrc), 'bin=' || p.probin),
      'comment=' || obj_description(p.oid, 'pg_proc'))
  FROM pg_proc p JOIN nsp n ON n.oid = p.pronamespace
  WHERE NOT n.skip AND p.oid >= ${FIRST_NORMAL_OID}

  UNION ALL
  SELECT 'other ' || g.cat, g.agent,
    CASE WHEN g.cat = 'pg_user_mappings' THEN g.cat || '#' || g.oid
         ELSE coalesce(pg_describe_object(g.cat::regclass, g.oid, 0), g.cat || '#' || g.oid) END,
    g.def
  FROM (
              SELECT 'pg_operator' AS cat, x.oid, x.oprnamespace AS ns, row_to_json(x)::text AS def, false AS agent FROM pg_operator x
    UNION ALL SELECT 'pg_opclass', x.oid, x.opcnamespace, row_to_json(x)::text, false FROM pg_opclass x
    UNION ALL SELECT 'pg_opfamily', x.oid, x.opfnamespace, row_to_json(x)::text, false FROM pg_opfamily x
    UNION ALL SELECT 'pg_amop', x.oid, NULL, row_to_json(x)::text, false FROM pg_amop x
    UNION ALL SELECT 'pg_amproc', x.oid, NULL, row_to_json(x)::text, false FROM pg_amproc x
    UNION ALL SELECT 'pg_collation', x.oid, x.collnamespace, row_to_json(x)::text, false FROM pg_collation x
    UNION ALL SELECT 'pg_conversion', x.oid, x.connamespace, row_to_json(x)::text, false FROM pg_conversion x
    UNION ALL SELECT 'pg_ts_config', x.oid, x.cfgnamespace, row_to_json(x)::text, false FROM pg_ts_config x
    UNION ALL SELECT 'pg_ts_dict', x.oid, x.dictnamespace, row_to_json(x)::text, false FROM pg_ts_dict x
    UNION ALL SELECT 'pg_ts_parser', x.oid, x.prsnamespace, row_to_json(x)::text, false FROM pg_ts_parser x
    UNION ALL SELECT 'pg_ts_template', x.oid, x.tmplnamespace, row_to_json(x)::text, false FROM pg_ts_template x
    UNION ALL SELECT 'pg_statistic_ext', x.oid, x.stxnamespace, row_to_json(x)::text, false FROM pg_statistic_ext x
    UNION ALL SELECT 'pg_extension', x.oid, x.extnamespace, row_to_json(x)::text, false FROM pg_extension x
    UNION ALL SELECT 'pg_event_trigger', x.oid, NULL, row_to_json(x)::text, false FROM pg_event_trigger x
    UNION ALL SELECT 'pg_publication', x.oid, NULL, row_to_json(x)::text, false FROM pg_publication x
    UNION ALL SELECT 'pg_publication_rel', x.oid, NULL, row_to_json(x)::text, false FROM pg_publication_rel x
    UNION ALL SELECT 'pg_publication_namespace', x.oid, NULL, row_to_json(x)::text, false FROM pg_publication_namespace x
    UNION ALL SELECT 'pg_foreign_data_wrapper', x.oid, NULL, row_to_json(x)::text, false FROM pg_foreign_data_wrapper x
    UNION ALL SELECT 'pg_foreign_server', x.oid, NULL, row_to_json(x)::text, false FROM pg_foreign_server x
    UNION ALL SELECT 'pg_user_mappings', x.umid, NULL, row_to_json(x)::text, false FROM pg_user_mappings x
    UNION ALL SELECT 'pg_cast', x.oid, NULL, row_to_json(x)::text, x.castfunc IN (SELECT oid FROM agent_proc) FROM pg_cast x  -- range ↔ multirange casts of agent types
    UNION ALL SELECT 'pg_language', x.oid, NULL, row_to_json(x)::text, false FROM pg_language x
    UNION ALL SELECT 'pg_transform', x.oid, NULL, row_to_json(x)::text, false FROM pg_transform x
    UNION ALL SELECT 'pg_am', x.oid, NULL, row_to_json(x)::text, false FROM pg_am x
    UNION ALL SELECT 'pg_default_acl', x.oid, x.defaclnamespace, row_to_json(x)::text, false FROM pg_default_acl x
  ) g LEFT JOIN nsp n ON n.oid = g.ns
  WHERE NOT coalesce(n.skip, false) AND g.oid >= ${FIRST_NORMAL_OID}

  UNION ALL
  SELECT 'database', false, 'database ' || quote_ident(d.datname),
    concat_ws(' | ', 'owner=' || pg_get_userbyid(d.datdba), 'acl=' || d.datacl::text, 'connection-limit=' || d.datconnlimit,
      'allow-connections=' || d.datallowconn, 'template=' || d.datistemplate, 'tablespace=' || d.dattablespace,
      'comment=' || shobj_description(d.oid, 'pg_database'))
  FROM pg_database d WHERE d.datname = current_database()

  UNION ALL
  SELECT 'database', false,
    'settings of ' || CASE WHEN s.setdatabase = 0 THEN 'every database' ELSE 'this database' END || ' for '
      || CASE WHEN s.setrole = 0 THEN 'every role' ELSE quote_ident(pg_get_userbyid(s.setrole)) END,
    s.setconfig::text
  FROM pg_db_role_setting s
  WHERE s.setdatabase = (SELECT oid FROM pg_database WHERE datname = current_database())
     OR (s.setdatabase = 0 AND s.setrole IN (0, (SELECT oid FROM pg_roles WHERE rolname = current_user)))

  UNION ALL
  SELECT 'database', false, 'role ' || quote_ident(r.rolname),
    concat_ws(' | ', 'superuser=' || r.rolsuper, 'inherit=' || r.rolinherit, 'create-role=' || r.rolcreaterole,
      'create-db=' || r.rolcreatedb, 'login=' || r.rolcanlogin, 'replication=' || r.rolreplication,
      'bypass-rls=' || r.rolbypassrls, 'connection-limit=' || r.rolconnlimit, 'valid-until=' || r.rolvaliduntil,
      'member-of=' || (SELECT string_agg(m.roleid::regrole::text || CASE WHEN m.admin_option THEN '*' ELSE '' END, ','
                                          ORDER BY m.roleid::regrole::text)
                       FROM pg_auth_members m WHERE m.member = r.oid),
      'members=' || (SELECT string_agg(m.member::regrole::text, ',' ORDER BY m.member::regrole::text)
                     FROM pg_auth_members m WHERE m.roleid = r.oid))
  FROM pg_roles r WHERE r.rolname = current_user
)`;

/**
 * Agent objects that reach core data: SCHEMA_POLICY.md "Core tables stay the application's" and "Forge's own
 * objects", checked on the catalog after every case. These are agent objects, so the fingerprint lets them be; each
 * row here is still a failure.
 */
const REACH = `
reach AS (
  SELECT c.conrelid::regclass::text || '.' || quote_ident(c.conname) AS key,
    'constraint ' || pg_get_constraintdef(c.oid) || ' on a core table reads its core column(s) '
      || string_agg(quote_ident(a.attname), ', ' ORDER BY a.attnum) AS def
  FROM pg_constraint c JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = ANY (c.conkey)
  WHERE c.oid IN (SELECT oid FROM agent_con) AND c.conrelid <> 0 AND c.conrelid NOT IN (SELECT oid FROM agent_rel)
    AND NOT EXISTS (SELECT 1 FROM agent_col ac WHERE ac.attrelid = a.attrelid AND ac.attnum = a.attnum)
  GROUP BY c.oid, c.conrelid, c.conname

  UNION ALL
  SELECT c.conrelid::regclass::text || '.' || quote_ident(c.conname),
    'foreign key on a core table with a referential action that writes core rows: ' || pg_get_constraintdef(c.oid)
  FROM pg_constraint c
  WHERE c.contype = 'f' AND c.oid IN (SELECT oid FROM agent_con) AND c.conrelid NOT IN (SELECT oid FROM agent_rel)
    AND (c.confdeltype IN ('c', 'd') OR c.confupdtype IN ('c', 'd'))

  UNION ALL
  SELECT i.indexrelid::regclass::text,
    'unique or exclusion index on a core table: ' || pg_get_indexdef(i.indexrelid)
  FROM pg_index i
  WHERE i.indexrelid IN (SELECT oid FROM agent_rel) AND i.indrelid NOT IN (SELECT oid FROM agent_rel)
    AND (i.indisunique OR i.indisexclusion)

  UNION ALL
  SELECT d.objid::regclass::text,
    'sequence owned by the core column ' || d.refobjid::regclass::text || '.' || quote_ident(a.attname)
  FROM pg_depend d JOIN pg_attribute a ON a.attrelid = d.refobjid AND a.attnum = d.refobjsubid
  JOIN pg_class s ON s.oid = d.objid AND s.relkind = 'S'
  WHERE d.classid = 'pg_class'::regclass AND d.refclassid = 'pg_class'::regclass AND d.deptype IN ('a', 'i')
    AND d.refobjsubid > 0 AND d.objid IN (SELECT oid FROM agent_rel)
    AND NOT EXISTS (SELECT 1 FROM agent_col ac WHERE ac.attrelid = d.refobjid AND ac.attnum = d.refobjsubid)

  UNION ALL
  SELECT pg_describe_object(d.classid, d.objid, d.objsubid),
    'agent object depends on Forge''s table ' || d.refobjid::regclass::text
  FROM pg_depend d
  WHERE d.refclassid = 'pg_class'::regclass AND d.refobjid IN (SELECT oid FROM forge_rel)
    AND ((d.classid = 'pg_class'::regclass AND d.objid IN (SELECT oid FROM agent_rel))
      OR (d.classid = 'pg_constraint'::regclass AND d.objid IN (SELECT oid FROM agent_con))
      OR (d.classid = 'pg_rewrite'::regclass
          AND d.objid IN (SELECT w.oid FROM pg_rewrite w WHERE w.ev_class IN (SELECT oid FROM agent_rel))))
  GROUP BY d.classid, d.objid, d.objsubid, d.refobjid

  UNION ALL
  SELECT w.ev_class::regclass::text,
    'view reads a system catalog: ' || string_agg(DISTINCT m.relid::regclass::text, ', ')
  FROM pg_rewrite w
  CROSS JOIN LATERAL (SELECT (regexp_matches(w.ev_action::text, ':relid (\\d+)', 'g'))[1]::oid AS relid) m
  WHERE w.ev_class IN (SELECT oid FROM agent_rel) AND m.relid < ${FIRST_NORMAL_OID}
  GROUP BY w.ev_class

  UNION ALL
  SELECT c.conrelid::regclass::text || '.' || quote_ident(c.conname),
    'CHECK on a core table calls function(s) that are not immutable: '
      || string_agg(DISTINCT p.oid::regprocedure::text, ', ')
  FROM pg_constraint c
  CROSS JOIN LATERAL (SELECT (regexp_matches(c.conbin::text, ':(?:func|opfunc)id (\\d+)', 'g'))[1]::oid AS fn) m
  JOIN pg_proc p ON p.oid = m.fn
  WHERE c.contype = 'c' AND c.oid IN (SELECT oid FROM agent_con) AND c.conrelid <> 0
    AND c.conrelid NOT IN (SELECT oid FROM agent_rel) AND p.provolatile <> 'i'
  GROUP BY c.oid, c.conrelid, c.conname
)`;

/** Facts the other facets need: what is the agent's (for pg_dump), which tables and sequences hold core data. */
const FACTS = `
SELECT '~agent-relation', json_build_array(r.nspname, r.relname)::text, r.relkind::text
FROM rel r WHERE r.oid IN (SELECT oid FROM agent_rel)
UNION ALL
SELECT '~agent-column', json_build_array(r.nspname, r.relname, a.attname)::text, NULL
FROM agent_col ac JOIN rel r ON r.oid = ac.attrelid JOIN pg_attribute a ON a.attrelid = ac.attrelid AND a.attnum = ac.attnum
UNION ALL
SELECT '~agent-constraint',
  json_build_array(n.nspname, coalesce(r.relname, t.typname), c.conname)::text, NULL
FROM pg_constraint c JOIN pg_namespace n ON n.oid = c.connamespace
LEFT JOIN pg_class r ON r.oid = c.conrelid LEFT JOIN pg_type t ON t.oid = c.contypid
WHERE c.oid IN (SELECT oid FROM agent_con)
UNION ALL
SELECT '~agent-type', json_build_array(n.nspname, t.typname)::text, NULL
FROM pg_type t JOIN pg_namespace n ON n.oid = t.typnamespace WHERE t.oid IN (SELECT oid FROM agent_type)
UNION ALL
SELECT '~table', r.qname,
  (SELECT json_agg(quote_ident(a.attname) ORDER BY a.attnum)::text FROM pg_attribute a
   WHERE a.attrelid = r.oid AND a.attnum > 0 AND NOT a.attisdropped
     AND NOT EXISTS (SELECT 1 FROM agent_col ac WHERE ac.attrelid = a.attrelid AND ac.attnum = a.attnum))
FROM rel r WHERE r.relkind = 'r' AND NOT r.sys AND r.oid NOT IN (SELECT oid FROM agent_rel)
UNION ALL
SELECT '~sequence', r.qname, NULL
FROM rel r WHERE r.relkind = 'S' AND NOT r.sys AND r.oid NOT IN (SELECT oid FROM agent_rel)`;

/**
 * The built-in catalogues (rows with oid < 16384: what initdb made). Nothing made later gets such an oid, so these
 * rows can only change or go. Per case the test hashes what a role could change (count, owners, privileges, options,
 * comments): turning every row into text costs ~70 ms, too much for ~200 cases. The whole rows are hashed at the start
 * and the end of a run, and read one by one whenever a hash moves, to show what moved.
 */
interface BuiltInCatalog {
  cat: string;
  /** What names a row (oid, or the columns that make it unique). */
  key: string;
  /** The columns a role with enough privileges could change; '' when there are none. */
  mutable: string;
  /** The whole row, minus the columns that change on their own. */
  row?: string;
  where?: string;
}

const BUILT_IN: BuiltInCatalog[] = [
  { cat: 'pg_namespace', key: 'x.oid', mutable: 'x.nspowner, x.nspacl' },
  {
    cat: 'pg_class',
    key: 'x.oid',
    mutable: 'x.relowner, x.relacl, x.reloptions, x.relrowsecurity, x.relforcerowsecurity, x.relreplident',
    // relpages, reltuples, relallvisible, relfrozenxid, relminmxid and relfilenode move with VACUUM and ANALYZE.
    row:
      '(x.oid, x.relname, x.relnamespace, x.reltype, x.relowner, x.relam, x.reltablespace, x.relacl, x.reloptions, ' +
      'x.relkind, x.relpersistence, x.relrowsecurity, x.relforcerowsecurity, x.relreplident, x.relispartition)',
  },
  {
    cat: 'pg_attribute',
    key: "x.attrelid || '.' || x.attnum",
    mutable: 'x.attacl, x.attoptions, x.attstattarget, x.attstorage',
    where: 'x.attrelid',
  },
  { cat: 'pg_index', key: 'x.indexrelid', mutable: 'x.indisclustered, x.indisreplident', where: 'x.indexrelid' },
  { cat: 'pg_attrdef', key: 'x.oid', mutable: '' },
  { cat: 'pg_constraint', key: 'x.oid', mutable: 'x.convalidated' },
  { cat: 'pg_trigger', key: 'x.oid', mutable: 'x.tgenabled' },
  {
    cat: 'pg_rewrite',
    key: 'x.oid',
    mutable: 'x.ev_enabled',
    // ev_qual and ev_action are whole query trees: large, and fixed by the rule's definition.
    row: '(x.oid, x.rulename, x.ev_class, x.ev_type, x.ev_enabled, x.is_instead)',
  },
  { cat: 'pg_type', key: 'x.oid', mutable: 'x.typowner, x.typacl' },
  { cat: 'pg_proc', key: 'x.oid', mutable: 'x.proowner, x.proacl, x.proconfig' },
  { cat: 'pg_aggregate', key: 'x.aggfnoid::oid', mutable: '', where: 'x.aggfnoid::oid' },
  { cat: 'pg_operator', key: 'x.oid', mutable: 'x.oprowner' },
  { cat: 'pg_opclass', key: 'x.oid', mutable: 'x.opcowner' },
  { cat: 'pg_opfamily', key: 'x.oid', mutable: 'x.opfowner' },
  { cat: 'pg_amop', key: 'x.oid', mutable: '' },
  { cat: 'pg_amproc', key: 'x.oid', mutable: '' },
  { cat: 'pg_am', key: 'x.oid', mutable: '' },
  { cat: 'pg_cast', key: 'x.oid', mutable: '' },
  { cat: 'pg_collation', key: 'x.oid', mutable: 'x.collowner, x.collversion' },
  { cat: 'pg_conversion', key: 'x.oid', mutable: 'x.conowner, x.condefault' },
  { cat: 'pg_enum', key: 'x.oid', mutable: '' },
  { cat: 'pg_range', key: 'x.rngtypid', mutable: '', where: 'x.rngtypid' },
  { cat: 'pg_language', key: 'x.oid', mutable: 'x.lanowner, x.lanacl' },
  { cat: 'pg_extension', key: 'x.oid', mutable: 'x.extowner, x.extversion, x.extconfig' },
  { cat: 'pg_ts_config', key: 'x.oid', mutable: 'x.cfgowner' },
  { cat: 'pg_ts_config_map', key: "x.mapcfg || '.' || x.maptokentype || '.' || x.mapseqno", mutable: 'x.mapdict', where: 'x.mapcfg' },
  { cat: 'pg_ts_dict', key: 'x.oid', mutable: 'x.dictowner, x.dictinitoption' },
  { cat: 'pg_ts_parser', key: 'x.oid', mutable: '' },
  { cat: 'pg_ts_template', key: 'x.oid', mutable: '' },
  { cat: 'pg_description', key: "x.classoid || '.' || x.objoid || '.' || x.objsubid", mutable: 'x.description', where: 'x.objoid' },
  { cat: 'pg_init_privs', key: "x.classoid || '.' || x.objoid || '.' || x.objsubid", mutable: 'x.initprivs', where: 'x.objoid' },
];

function builtInRows(kind: 'mutable' | 'row'): string {
  const selects = BUILT_IN.map((c) => {
    const row = kind === 'row' ? (c.row ?? 'x') : c.mutable ? `(${c.mutable}, 0)` : "''";
    return `SELECT '${c.cat}' AS cat, (${c.key})::text AS key, ${row}::text AS row FROM ${c.cat} x WHERE ${c.where ?? 'x.oid'} < ${FIRST_NORMAL_OID}`;
  });
  return `built_in(cat, key, row) AS (\n  ${selects.join('\n  UNION ALL ')}\n)`;
}

/**
 * The fingerprint of user objects (one row per object), one row per built-in catalogue (its count and the hash of what
 * could change in it), the reach rows (`grp = 'reach'`) and the facts (`grp` starting with `~`).
 */
export const CATALOG_SQL = `
WITH ${CLASSIFY},
${OBJECTS},
${REACH},
${builtInRows('mutable')}
SELECT grp, key, def FROM objects WHERE NOT agent
UNION ALL
SELECT 'built-in ' || cat, '#hash', count(*) || ' rows, ' || sum(hashtext(key || '=' || row)::bigint) FROM built_in GROUP BY cat
UNION ALL
SELECT 'reach', key, def FROM reach
UNION ALL
${FACTS}`;

/** Each built-in catalogue's whole rows, as one hash per catalogue (the start and the end of a run). */
export const BUILT_IN_HASH_SQL = `
WITH ${builtInRows('row')}
SELECT 'built-in ' || cat AS grp, '#rows' AS key, count(*) || ' rows, ' || md5(string_agg(key || '=' || row, E'\\n' ORDER BY key)) AS def
FROM built_in GROUP BY cat`;

/** The whole rows of the built-in catalogues $1 (names like 'pg_proc'), to show what moved when a hash did. */
export const BUILT_IN_ROWS_SQL = `
WITH ${builtInRows('row')}
SELECT 'built-in ' || cat AS grp, key, row AS def FROM built_in WHERE cat = ANY ($1::text[])`;

/**
 * The statements that drop every agent object (and agent_ column, index, constraint, trigger, rule, policy or routine
 * anywhere, Forge's tables included), so that each case of the corpus starts from the fixture. IF EXISTS and CASCADE
 * throughout: an earlier statement may already have taken a later object with it.
 */
export const CLEANUP_SQL = `
WITH ${CLASSIFY}
SELECT stmt FROM (
  SELECT 1 AS step, format('DROP %s IF EXISTS %I.%I CASCADE',
    CASE c.relkind WHEN 'v' THEN 'VIEW' WHEN 'm' THEN 'MATERIALIZED VIEW' WHEN 'f' THEN 'FOREIGN TABLE' ELSE 'TABLE' END,
    n.nspname, c.relname) AS stmt, c.relname::text AS name
  FROM pg_class c JOIN nsp n ON n.oid = c.relnamespace
  WHERE c.oid IN (SELECT oid FROM agent_rel0) AND c.relkind IN ('r', 'p', 'v', 'm', 'f')
  UNION ALL
  SELECT 2, format('ALTER TABLE IF EXISTS %I.%I DROP COLUMN IF EXISTS %I CASCADE', n.nspname, c.relname, a.attname), a.attname
  FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid JOIN nsp n ON n.oid = c.relnamespace
  WHERE a.attnum > 0 AND NOT a.attisdropped AND a.attname LIKE 'agent\\_%' AND NOT n.sys AND NOT n.skip
    AND c.relkind IN ('r', 'p', 'f') AND c.oid NOT IN (SELECT oid FROM agent_rel0)
  UNION ALL
  SELECT 3, format('DROP INDEX IF EXISTS %I.%I CASCADE', n.nspname, c.relname), c.relname
  FROM pg_class c JOIN nsp n ON n.oid = c.relnamespace
  WHERE c.relkind IN ('i', 'I') AND c.relname LIKE 'agent\\_%' AND NOT n.sys AND NOT n.skip
    AND NOT EXISTS (SELECT 1 FROM pg_constraint k WHERE k.conindid = c.oid)
    AND NOT EXISTS (SELECT 1 FROM pg_index i JOIN pg_class t ON t.oid = i.indrelid
                    WHERE i.indexrelid = c.oid AND t.oid IN (SELECT oid FROM forge_rel) AND starts_with(c.relname, t.relname || '_'))
  UNION ALL
  SELECT 4, format('ALTER TABLE IF EXISTS %I.%I DROP CONSTRAINT IF EXISTS %I CASCADE', n.nspname, c.relname, k.conname), k.conname
  FROM pg_constraint k JOIN pg_class c ON c.oid = k.conrelid JOIN nsp n ON n.oid = c.relnamespace
  WHERE k.conname LIKE 'agent\\_%' AND NOT n.sys AND NOT n.skip AND c.oid NOT IN (SELECT oid FROM agent_rel0)
    -- Forge's own, while its tracking table is still called agent_migrations (agent_migrations_pkey)
    AND NOT (c.oid IN (SELECT oid FROM forge_rel) AND starts_with(k.conname, c.relname || '_'))
  UNION ALL
  SELECT 5, format('DROP SEQUENCE IF EXISTS %I.%I CASCADE', n.nspname, c.relname), c.relname
  FROM pg_class c JOIN nsp n ON n.oid = c.relnamespace
  WHERE c.relkind = 'S' AND c.oid IN (SELECT oid FROM agent_rel0)
  UNION ALL
  SELECT 6, format('DROP %s IF EXISTS %I.%I CASCADE', CASE t.typtype WHEN 'd' THEN 'DOMAIN' ELSE 'TYPE' END,
    n.nspname, t.typname), t.typname
  FROM pg_type t JOIN nsp n ON n.oid = t.typnamespace
  WHERE t.oid IN (SELECT oid FROM agent_type0) AND t.typrelid = 0
  UNION ALL
  SELECT 7, format('DROP TRIGGER IF EXISTS %I ON %I.%I CASCADE', t.tgname, n.nspname, c.relname), t.tgname
  FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid JOIN nsp n ON n.oid = c.relnamespace
  WHERE t.tgname LIKE 'agent\\_%' AND NOT t.tgisinternal AND NOT n.sys AND c.oid NOT IN (SELECT oid FROM agent_rel0)
  UNION ALL
  SELECT 7, format('DROP RULE IF EXISTS %I ON %I.%I CASCADE', w.rulename, n.nspname, c.relname), w.rulename
  FROM pg_rewrite w JOIN pg_class c ON c.oid = w.ev_class JOIN nsp n ON n.oid = c.relnamespace
  WHERE w.rulename LIKE 'agent\\_%' AND NOT n.sys AND c.oid NOT IN (SELECT oid FROM agent_rel0)
  UNION ALL
  SELECT 7, format('DROP POLICY IF EXISTS %I ON %I.%I', p.polname, n.nspname, c.relname), p.polname
  FROM pg_policy p JOIN pg_class c ON c.oid = p.polrelid JOIN nsp n ON n.oid = c.relnamespace
  WHERE p.polname LIKE 'agent\\_%' AND NOT n.sys AND c.oid NOT IN (SELECT oid FROM agent_rel0)
  UNION ALL
  SELECT 8, format('DROP ROUTINE IF EXISTS %s CASCADE', p.oid::regprocedure), p.proname
  FROM pg_proc p JOIN nsp n ON n.oid = p.pronamespace
  WHERE p.proname LIKE 'agent\\_%' AND NOT n.sys AND NOT n.skip AND p.prokind <> 'a'
    AND p.oid NOT IN (SELECT oid FROM agent_proc)
  UNION ALL
  SELECT 8, format('DROP STATISTICS IF EXISTS %I.%I', n.nspname, s.stxname), s.stxname
  FROM pg_statistic_ext s JOIN nsp n ON n.oid = s.stxnamespace
  WHERE s.stxname LIKE 'agent\\_%'
  UNION ALL
  SELECT 9, format('DROP SCHEMA IF EXISTS %I CASCADE', n.nspname), n.nspname
  FROM nsp n WHERE n.nspname LIKE 'agent\\_%'
) s
ORDER BY step, name`;
