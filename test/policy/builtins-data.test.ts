import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { isAllowedFunction, isAllowedOperator, isImmutableFunction, refusalReason } from '../../src/policy/builtins';

const root = path.resolve(__dirname, '../..');

describe('the allowlist of built-ins (src/policy/data/pg-builtins.json)', () => {
  test("is exactly what scripts/generate-pg-builtins.mjs reads from PostgreSQL's catalogue today", () => {
    const run = spawnSync(process.execPath, ['scripts/generate-pg-builtins.mjs', '--check'], { cwd: root, encoding: 'utf8' });
    expect(run.stderr).toBe('');
    expect(run.status).toBe(0);
  });

  test.each([
    'set_config',
    'setval',
    'nextval',
    'currval',
    'pg_notify',
    'pg_sleep',
    'pg_terminate_backend',
    'pg_read_file',
    'lo_export',
    'lo_from_bytea',
    'query_to_xml',
    'ts_stat',
    'pg_advisory_lock',
    'pg_advisory_xact_lock',
    'dblink',
    'current_setting',
    'txid_current',
    'pg_stat_get_activity',
    'table_to_xml',
  ])('refuses %s', (name) => {
    expect(isAllowedFunction(name)).toBe(false);
    expect(refusalReason(name)).not.toBe('unknown');
  });

  test.each(['lower', 'length', 'now', 'date_trunc', 'jsonb_build_object', 'gen_random_uuid', 'count', 'string_agg', 'to_char', 'age'])('allows %s', (name) =>
    expect(isAllowedFunction(name)).toBe(true),
  );

  test('knows which functions are immutable (what a CHECK on a core table may call)', () => {
    expect(isImmutableFunction('lower')).toBe(true);
    expect(isImmutableFunction('now')).toBe(false);
    expect(isImmutableFunction('random')).toBe(false);
  });

  test('allows the built-in operators and knows nothing of invented ones', () => {
    for (const op of ['=', '<', '+', '||', '->>', '@>', '~~', '&&']) expect(isAllowedOperator(op)).toBe(true);
    expect(isAllowedOperator('===>')).toBe(false);
    expect(refusalReason('no_such_function')).toBe('unknown');
  });
});
