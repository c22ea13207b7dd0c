/**
 * The policy's lock plan (src/policy/lock-plan.ts): which core tables a statement names, and the CONCURRENTLY rewrite
 * of an index on a core table, which must be the very same statement with `concurrent` set, whatever it holds. Every
 * CREATE INDEX on a core table in the red-team corpus's legitimate cases is rewritten and proven.
 */
import { checkMigration, concurrentIndexSql, loadPolicyParser, planLocks } from '../../src/policy';
import { legitimate } from './redteam/corpus';

beforeAll(() => loadPolicyParser());

test('the core tables a statement names, and the index a statement creates on one', () => {
  const plan = planLocks(`CREATE TABLE agent_t (user_id int REFERENCES users (id));
ALTER TABLE orders ADD COLUMN agent_note text;
COMMENT ON COLUMN users.agent_x IS 'x';
CREATE INDEX agent_t_idx ON agent_t (user_id);
CREATE INDEX agent_orders_idx ON orders (user_id);`);
  expect(plan.map((p) => p.coreTables)).toEqual([['users'], ['orders'], ['users'], [], ['orders']]);
  expect(plan.map((p) => p.relations)).toEqual([['agent_t', 'users'], ['orders'], ['users'], ['agent_t'], ['orders']]);
  expect(plan.map((p) => p.coreIndex)).toEqual([undefined, undefined, undefined, undefined, { index: 'agent_orders_idx', table: 'orders' }]);
});

test.each([
  ['CREATE INDEX agent_a ON orders (user_id)', 'CREATE INDEX CONCURRENTLY agent_a ON orders (user_id)'],
  ['create /* why */ index agent_a on orders (user_id)', 'create /* why */ index CONCURRENTLY agent_a on orders (user_id)'],
  ['CREATE INDEX IF NOT EXISTS agent_a ON orders (a DESC NULLS LAST)', 'CREATE INDEX CONCURRENTLY IF NOT EXISTS agent_a ON orders (a DESC NULLS LAST)'],
  [
    "CREATE INDEX \"agent_é\" ON orders (lower(x)) WHERE s IN ('a', 'b') AND t >= 0",
    "CREATE INDEX CONCURRENTLY \"agent_é\" ON orders (lower(x)) WHERE s IN ('a', 'b') AND t >= 0",
  ],
])('%s is rewritten CONCURRENTLY', (text, expected) => {
  expect(concurrentIndexSql(text)).toBe(expected);
});

test('a rewrite that would not be the same index is refused', () => {
  expect(() => concurrentIndexSql('CREATE TABLE agent_x (id int)')).toThrow(/not a CREATE INDEX|not the same index/);
  // Already CONCURRENTLY (the policy refuses that anyway): the rewrite does not parse, so it never runs.
  expect(() => concurrentIndexSql('CREATE INDEX CONCURRENTLY agent_a ON orders (x)')).toThrow();
});

test('every CREATE INDEX on a core table among the legitimate corpus cases rewrites to the same statement', async () => {
  let rewritten = 0;
  for (const c of legitimate) {
    const { statements } = await checkMigration(c.sql);
    planLocks(c.sql).forEach((p, i) => {
      if (!p.coreIndex) return;
      expect(() => concurrentIndexSql(statements[i].text)).not.toThrow();
      rewritten++;
    });
  }
  expect(rewritten).toBeGreaterThan(5);
});
