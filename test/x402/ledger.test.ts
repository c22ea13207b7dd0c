import { randomBytes } from 'node:crypto';
import { sql } from 'drizzle-orm';
import { postgresErrorOf, type ForgeDatabase } from '../../src/db';
import { checkMigration } from '../../src/policy';
import { MIGRATION_NAME_PATTERN } from '../../src/contract/migration-runs';
import { createLedger, LEDGER_MIGRATION_NAME, LEDGER_MIGRATION_SQL, PNL_NO_TOOL, type Ledger, type ReserveOutInput } from '../../src/x402/ledger';
import { LedgerConflictError, LedgerInputError, LedgerNotReadyError, LedgerRowNotFoundError } from '../../src/x402/errors';
import { backendKinds, type TestBackend } from '../db/backends';
import { applyLedgerMigration } from '../helpers/x402-ledger';

// The ledger on the real database, created the way Forge creates it: the migration activities' own validate (the
// schema policy) and apply (one transaction, as the agent role on PostgreSQL), called without Temporal in front.

const NETWORK = 'eip155:31337';
const PAYEE = '0x00000000000000000000000000000000000000b0';
const BUYER = '0x00000000000000000000000000000000000000c0';

/** An asset of its own per test: budgets and P&L are per (asset, network), so tests do not see each other's rows. */
const freshAsset = () => `0x${randomBytes(20).toString('hex')}`;
const nonce = () => `0x${randomBytes(32).toString('hex')}`;

async function rows<T>(database: ForgeDatabase, query: ReturnType<typeof sql>): Promise<T[]> {
  return ((await database.db.execute(query)) as unknown as { rows: T[] }).rows;
}

describe.each(backendKinds())('x402 ledger on $kind', ({ make }) => {
  let backend: TestBackend;
  let database: ForgeDatabase;
  let ledger: Ledger;
  // Each test needs the ledger's tables; the first test creates them and checks how, the others (run alone with -t)
  // apply the same migration, which is a no-op once it is there.
  const ready = async () => {
    if (!(await ledger.isReady())) await applyLedgerMigration(database, 'run-setup');
  };

  beforeAll(async () => {
    backend = make();
    database = await backend.open();
    ledger = createLedger(database);
  });
  afterAll(async () => {
    await database?.close();
    await backend?.dispose();
  });

  const out = (asset: string, workflowId: string, amount: bigint, dailyBudget: bigint, extra: Partial<ReserveOutInput> = {}) =>
    ({
      workflowId,
      counterparty: PAYEE,
      resource: 'http://127.0.0.1:1/report',
      amount,
      asset,
      network: NETWORK,
      dailyBudget,
      ...extra,
    }) satisfies ReserveOutInput;

  test('the schema policy accepts the migration, and the migration activities create the ledger once', async () => {
    expect(MIGRATION_NAME_PATTERN.test(LEDGER_MIGRATION_NAME)).toBe(true);
    const report = await checkMigration(LEDGER_MIGRATION_SQL, { schema: database.schema });
    expect(report.problem).toBeUndefined();
    expect(report.statements.filter((s) => !s.accepted)).toEqual([]);
    expect(report.accepted).toBe(true);

    expect(await ledger.isReady()).toBe(false);
    await expect(ledger.getOut('nothing-yet')).rejects.toBeInstanceOf(LedgerNotReadyError);

    const { validated, applied } = await applyLedgerMigration(database, 'run-1');
    expect(validated.status).toBe('ready');
    expect(applied).toMatchObject({ status: 'applied', byEarlierAttempt: false, statementCount: report.statements.length });
    expect(await ledger.isReady()).toBe(true);
    // A later first payment that runs the workflow again (another run) finds it applied and changes nothing.
    expect((await applyLedgerMigration(database, 'run-2')).applied.status).toBe('alreadyApplied');
  });

  test('20 concurrent reservations against a budget that fits 7: exactly 7, never overspent', async () => {
    await ready();
    const asset = freshAsset();
    const results = await Promise.all(Array.from({ length: 20 }, (_, i) => ledger.reserveOut(out(asset, `pay/concurrent/${i}`, 100n, 700n))));
    const reserved = results.filter((r) => r.ok);
    const refused = results.filter((r) => !r.ok);
    expect(reserved).toHaveLength(7);
    expect(refused).toHaveLength(13);
    // Serialized: each refusal saw all 7 reservations, so it names the full window.
    for (const r of refused) expect(r).toEqual({ ok: false, limit: 'dailyBudget', budget: '700', spentInWindow: '700', amount: '100' });
    const [sum] = await rows<{ n: string; total: string }>(
      database,
      sql`SELECT count(*)::text AS n, coalesce(sum(amount), 0)::text AS total FROM agent_x402_transactions WHERE asset = ${asset}`,
    );
    expect(sum).toEqual({ n: '7', total: '700' });

    // A failed payment gives its amount back; a settled one keeps it.
    const first = reserved[0];
    if (!first.ok) throw new Error('unreachable');
    expect((await ledger.failOut(first.row.workflowId!, 'payee refused')).outcome).toBe('updated');
    expect(await ledger.reserveOut(out(asset, 'pay/concurrent/after-fail', 100n, 700n))).toMatchObject({ ok: true, created: true });
    expect(await ledger.reserveOut(out(asset, 'pay/concurrent/over', 1n, 700n))).toMatchObject({ ok: false, spentInWindow: '700', amount: '1' });
  });

  test('the window is the last 24 hours; another asset has its own budget', async () => {
    await ready();
    const asset = freshAsset();
    const now = Date.now();
    const yesterday = new Date(now - 24.5 * 3600_000);
    expect(await ledger.reserveOut(out(asset, 'pay/window/old', 500n, 500n, { now: yesterday }))).toMatchObject({ ok: true });
    // An hour ago, the 24 h before held the old reservation: 500 + 300 needed a budget of 800.
    expect(await ledger.reserveOut(out(asset, 'pay/window/recent', 300n, 799n, { now: new Date(now - 3600_000) }))).toMatchObject({
      ok: false,
      spentInWindow: '500',
    });
    expect(await ledger.reserveOut(out(asset, 'pay/window/recent', 300n, 800n, { now: new Date(now - 3600_000) }))).toMatchObject({ ok: true });
    // Now the 24.5 h old reservation is out of the window, the 1 h old one in it.
    expect(await ledger.reserveOut(out(asset, 'pay/window/now', 201n, 500n))).toMatchObject({ ok: false, spentInWindow: '300' });
    expect(await ledger.reserveOut(out(asset, 'pay/window/now', 200n, 500n))).toMatchObject({ ok: true });
    expect(await ledger.reserveOut(out(freshAsset(), 'pay/window/other-asset', 500n, 500n))).toMatchObject({ ok: true });
  });

  test('a reservation retried with the same workflow ID counts once, even when the budget is full', async () => {
    await ready();
    const asset = freshAsset();
    const input = out(asset, 'pay/retried', 100n, 100n);
    const [a, b] = await Promise.all([ledger.reserveOut(input), ledger.reserveOut(input)]);
    expect(a.ok && b.ok).toBe(true);
    if (!a.ok || !b.ok) throw new Error('unreachable');
    expect(a.row.id).toBe(b.row.id);
    expect([a.created, b.created].sort()).toEqual([false, true]);
    // The budget (100) is used up by this very reservation: the retry still gets its row, not a refusal.
    expect(await ledger.reserveOut(input)).toMatchObject({ ok: true, created: false, row: { id: a.row.id, status: 'reserved' } });
    const [count] = await rows<{ n: string }>(database, sql`SELECT count(*)::text AS n FROM agent_x402_transactions WHERE asset = ${asset}`);
    expect(count.n).toBe('1');
    // One workflow is one payment: the same ID for another amount is refused.
    await expect(ledger.reserveOut({ ...input, amount: 99n })).rejects.toBeInstanceOf(LedgerConflictError);
  });

  test('settle and fail are idempotent and final', async () => {
    await ready();
    const asset = freshAsset();
    await ledger.reserveOut(out(asset, 'pay/settle', 10n, 1_000n));
    const n = nonce();
    expect((await ledger.attachNonce('pay/settle', n)).paymentNonce).toBe(n);
    // A sign step retried after its result was lost signs anew: while reserved, the last nonce is the row's.
    const resigned = nonce();
    expect((await ledger.attachNonce('pay/settle', resigned)).paymentNonce).toBe(resigned);
    expect((await ledger.attachNonce('pay/settle', n)).paymentNonce).toBe(n);

    const settled = await ledger.settleOut('pay/settle', { txHash: '0xaaa', payer: BUYER });
    expect(settled).toMatchObject({ outcome: 'updated', row: { status: 'settled', txHash: '0xaaa', payer: BUYER } });
    expect(settled.row.settledAt).toEqual(expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/));
    const again = await ledger.settleOut('pay/settle', { txHash: '0xbbb' });
    expect(again).toMatchObject({ outcome: 'unchanged', row: { status: 'settled', txHash: '0xaaa', settledAt: settled.row.settledAt } });
    expect(await ledger.failOut('pay/settle', 'late timeout')).toMatchObject({ outcome: 'conflict', row: { status: 'settled', reason: null } });
    // Final: its nonce stays.
    await expect(ledger.attachNonce('pay/settle', nonce())).rejects.toBeInstanceOf(LedgerConflictError);
    expect((await ledger.getOut('pay/settle'))?.paymentNonce).toBe(n);
    // A settlement known only from the chain may have no tx hash: stored as null.
    await ledger.reserveOut(out(asset, 'pay/settle-no-hash', 10n, 1_000n));
    expect(await ledger.settleOut('pay/settle-no-hash', { txHash: '' })).toMatchObject({ outcome: 'updated', row: { status: 'settled', txHash: null } });

    await ledger.reserveOut(out(asset, 'pay/fail', 10n, 1_000n));
    expect(await ledger.failOut('pay/fail', 'facilitator said invalid')).toMatchObject({
      outcome: 'updated',
      row: { status: 'failed', reason: 'facilitator said invalid', settledAt: null },
    });
    expect(await ledger.failOut('pay/fail', 'second reason')).toMatchObject({ outcome: 'unchanged', row: { reason: 'facilitator said invalid' } });
    expect(await ledger.settleOut('pay/fail', { txHash: '0xccc' })).toMatchObject({ outcome: 'conflict', row: { status: 'failed', txHash: null } });
    // A final row without a signature takes no nonce any more.
    await expect(ledger.attachNonce('pay/fail', nonce())).rejects.toBeInstanceOf(LedgerConflictError);

    await expect(ledger.settleOut('pay/never-reserved', { txHash: '0x1' })).rejects.toBeInstanceOf(LedgerRowNotFoundError);
    await expect(ledger.failOut('pay/never-reserved', 'x')).rejects.toBeInstanceOf(LedgerRowNotFoundError);
    await expect(ledger.attachNonce('pay/never-reserved', nonce())).rejects.toBeInstanceOf(LedgerRowNotFoundError);
  });

  test('recordIn is one row per nonce; a nonce is refused on a second row of the same direction', async () => {
    await ready();
    const asset = freshAsset();
    const n = nonce();
    const sale = {
      nonce: n,
      counterparty: BUYER,
      resource: 'http://127.0.0.1:1/tools/sum',
      tool: 'sum',
      amount: 25n,
      asset,
      network: NETWORK,
      txHash: '0xdef',
    } as const;
    const first = await ledger.recordIn({ ...sale, status: 'settled' });
    expect(first).toMatchObject({ outcome: 'recorded', row: { direction: 'in', status: 'settled', amount: '25', tool: 'sum', payer: BUYER, paymentNonce: n } });
    expect(await ledger.recordIn({ ...sale, status: 'settled' })).toEqual({ outcome: 'unchanged', row: first.row });
    expect(await ledger.recordIn({ ...sale, status: 'failed', reason: 'replayed' })).toMatchObject({
      outcome: 'conflict',
      row: { id: first.row.id, status: 'settled' },
    });
    const [count] = await rows<{ n: string }>(database, sql`SELECT count(*)::text AS n FROM agent_x402_transactions WHERE payment_nonce = ${n}`);
    expect(count.n).toBe('1');

    // The same payment seen from the paying side (this Forge bought its own tool) is the 'out' row of that nonce.
    await ledger.reserveOut(out(asset, 'pay/self', 25n, 1_000n));
    expect((await ledger.attachNonce('pay/self', n)).paymentNonce).toBe(n);
    // A second 'out' row with the nonce is refused: one authorization pays once.
    await ledger.reserveOut(out(asset, 'pay/dup-nonce', 25n, 1_000n));
    const dup = await ledger.attachNonce('pay/dup-nonce', n).catch((e: unknown) => e);
    expect(dup).toBeInstanceOf(LedgerConflictError);
    expect((dup as LedgerConflictError).row?.workflowId).toBe('pay/self');
    expect((await ledger.getOut('pay/dup-nonce'))?.paymentNonce).toBeNull();
    // And the database itself refuses a second 'in' row of a nonce, whoever writes it.
    const raw = await database.db
      .execute(
        sql`INSERT INTO agent_x402_transactions (direction, counterparty, resource, amount, asset, network, payment_nonce, status, settled_at)
            VALUES ('in', ${BUYER}, 'r', 1, ${asset}, ${NETWORK}, ${n}, 'settled', now())`,
      )
      .catch((e: unknown) => e);
    expect(postgresErrorOf(raw)?.code).toBe('23505');
  });

  test('a sale is reserved before it is settled: reserved → settled (or failed) on the same row; a final row never changes', async () => {
    await ready();
    const asset = freshAsset();
    const sale = (n: string) => ({
      nonce: n,
      counterparty: BUYER,
      resource: 'http://127.0.0.1:1/tools/sum',
      tool: 'sum',
      amount: 25n,
      asset,
      network: NETWORK,
    });
    const [paid, refused] = [nonce(), nonce()];
    const reserved = await ledger.recordIn({ ...sale(paid), status: 'reserved' });
    expect(reserved).toMatchObject({ outcome: 'recorded', row: { direction: 'in', status: 'reserved', settledAt: null, txHash: null } });
    // A retried reservation (the buyer sent the payment again after a crash) is the same row.
    expect(await ledger.recordIn({ ...sale(paid), status: 'reserved' })).toEqual({ outcome: 'unchanged', row: reserved.row });
    // Not income until settled.
    expect((await ledger.pnl({ by: 'tool', asset })).rows).toEqual([]);
    const settled = await ledger.recordIn({ ...sale(paid), status: 'settled', txHash: '0xabc' });
    expect(settled).toMatchObject({ outcome: 'recorded', row: { id: reserved.row.id, status: 'settled', txHash: '0xabc', settledAt: expect.any(String) } });
    expect(await ledger.recordIn({ ...sale(paid), status: 'settled', txHash: '0xabc' })).toMatchObject({ outcome: 'unchanged' });
    // Once final, neither back to reserved (a late retry of the reservation) nor to the other outcome.
    expect(await ledger.recordIn({ ...sale(paid), status: 'reserved' })).toMatchObject({ outcome: 'conflict', row: { status: 'settled' } });
    expect(await ledger.recordIn({ ...sale(paid), status: 'failed', reason: 'x' })).toMatchObject({ outcome: 'conflict', row: { status: 'settled' } });
    expect((await ledger.pnl({ by: 'tool', asset })).rows).toEqual([expect.objectContaining({ key: 'sum', income: '25' })]);

    await ledger.recordIn({ ...sale(refused), status: 'reserved' });
    expect(await ledger.recordIn({ ...sale(refused), status: 'failed', reason: 'insufficient funds' })).toMatchObject({
      outcome: 'recorded',
      row: { status: 'failed', reason: 'insufficient funds', settledAt: null },
    });
    // A reserved sale is what reconciliation looks for.
    const pending = await ledger.recordIn({ ...sale(nonce()), status: 'reserved' });
    expect((await ledger.reservedOlderThan(0, new Date(Date.now() + 60_000))).map((r) => r.id)).toContain(pending.row.id);
    await expect(ledger.recordIn({ ...sale(nonce()), status: 'pending' as never })).rejects.toBeInstanceOf(LedgerInputError);
  });

  test('reservedOlderThan finds the reservations a crash left behind', async () => {
    await ready();
    const asset = freshAsset();
    const now = Date.now();
    await ledger.reserveOut(out(asset, 'pay/stuck', 5n, 100n, { now: new Date(now - 60 * 60_000) }));
    await ledger.reserveOut(out(asset, 'pay/stuck-settled', 5n, 100n, { now: new Date(now - 60 * 60_000) }));
    await ledger.settleOut('pay/stuck-settled', { txHash: '0x2' });
    await ledger.reserveOut(out(asset, 'pay/in-flight', 5n, 100n));
    const stuck = (await ledger.reservedOlderThan(10 * 60_000)).filter((r) => r.asset === asset);
    expect(stuck.map((r) => r.workflowId)).toEqual(['pay/stuck']);
    const all = (await ledger.reservedOlderThan(0, new Date(now + 1_000))).filter((r) => r.asset === asset);
    expect(all.map((r) => r.workflowId)).toEqual(['pay/stuck', 'pay/in-flight']);
  });

  test('pnl by tool and by day: settled income minus settled spend', async () => {
    await ready();
    const asset = freshAsset();
    const sell = (tool: string | null, amount: bigint, status: 'settled' | 'failed' = 'settled') =>
      ledger.recordIn({ nonce: nonce(), counterparty: BUYER, resource: `http://x/${tool}`, tool, amount, asset, network: NETWORK, status, txHash: '0x1' });
    await sell('alpha', 300n);
    await sell('alpha', 200n);
    await sell('beta', 50n);
    await sell('beta', 1_000n, 'failed'); // no money moved
    await ledger.reserveOut(out(asset, `pay/pnl/${asset}/settled`, 120n, 10_000n));
    await ledger.settleOut(`pay/pnl/${asset}/settled`, { txHash: '0x3' });
    await ledger.reserveOut(out(asset, `pay/pnl/${asset}/reserved`, 999n, 10_000n)); // not spent yet
    await ledger.reserveOut(out(asset, `pay/pnl/${asset}/failed`, 77n, 10_000n));
    await ledger.failOut(`pay/pnl/${asset}/failed`, 'x');

    const byTool = await ledger.pnl({ by: 'tool', asset, network: NETWORK });
    expect(byTool.rows).toEqual([
      { key: PNL_NO_TOOL, asset, network: NETWORK, income: '0', spend: '120', net: '-120' },
      { key: 'alpha', asset, network: NETWORK, income: '500', spend: '0', net: '500' },
      { key: 'beta', asset, network: NETWORK, income: '50', spend: '0', net: '50' },
    ]);
    expect(byTool.totals).toEqual({ income: '550', spend: '120', net: '430' });
    expect(byTool.assets).toEqual([{ asset, network: NETWORK }]);

    // Move one sale and the payment to the day before (UTC): the day is when the money moved.
    const [beta] = await rows<{ id: string }>(
      database,
      sql`SELECT id::text AS id FROM agent_x402_transactions WHERE asset = ${asset} AND tool = 'beta' AND status = 'settled'`,
    );
    await database.db.execute(
      sql`UPDATE agent_x402_transactions SET settled_at = settled_at - interval '1 day'
           WHERE asset = ${asset} AND status = 'settled' AND (id = ${beta.id}::uuid OR direction = 'out')`,
    );
    const [today] = await rows<{ d: string }>(database, sql`SELECT (now() AT TIME ZONE 'UTC')::date::text AS d`);
    const [yesterday] = await rows<{ d: string }>(database, sql`SELECT ((now() AT TIME ZONE 'UTC')::date - 1)::text AS d`);
    const byDay = await ledger.pnl({ by: 'day', asset });
    expect(byDay.rows).toEqual([
      { key: yesterday.d, asset, network: NETWORK, income: '50', spend: '120', net: '-70' },
      { key: today.d, asset, network: NETWORK, income: '500', spend: '0', net: '500' },
    ]);
    expect(byDay.totals).toEqual(byTool.totals);
    // Unfiltered, the report holds every asset's rows, and says which assets they are.
    const everything = await ledger.pnl({ by: 'tool' });
    expect(everything.assets).toContainEqual({ asset, network: NETWORK });
    expect(everything.assets.length).toBeGreaterThan(1);
  });

  test('offers: put is an upsert, list is by tool, remove says whether there was one', async () => {
    await ready();
    const offer = { tool: 'zeta_sum', price: 1_000n, asset: freshAsset(), network: NETWORK, payTo: PAYEE, description: 'adds numbers' };
    const first = await ledger.putOffer(offer);
    expect(first).toMatchObject({ tool: 'zeta_sum', price: '1000', payTo: PAYEE, description: 'adds numbers' });
    const repriced = await ledger.putOffer({ ...offer, price: 2_500n });
    expect(repriced).toMatchObject({ price: '2500', createdAt: first.createdAt });
    expect(Date.parse(repriced.updatedAt)).toBeGreaterThanOrEqual(Date.parse(first.updatedAt));
    await ledger.putOffer({ ...offer, tool: 'alpha_echo', price: 5n, description: undefined });
    const listed = await ledger.listOffers();
    expect(listed.map((o) => [o.tool, o.price, o.description])).toEqual([
      ['alpha_echo', '5', ''],
      ['zeta_sum', '2500', 'adds numbers'],
    ]);
    expect(await ledger.getOffer('zeta_sum')).toEqual(repriced);
    expect(await ledger.removeOffer('zeta_sum')).toBe(true);
    expect(await ledger.removeOffer('zeta_sum')).toBe(false);
    expect((await ledger.listOffers()).map((o) => o.tool)).toEqual(['alpha_echo']);
  });
});

describe.each(backendKinds())('x402 ledger in a configured schema on $kind', ({ make }) => {
  let backend: TestBackend;
  let database: ForgeDatabase;
  beforeAll(async () => {
    backend = make();
    database = await backend.open('forge_ledger');
  });
  afterAll(async () => {
    await database?.close();
    await backend?.dispose();
  });

  test('the migration creates the tables in FORGE_SCHEMA and the ledger addresses them there', async () => {
    expect((await applyLedgerMigration(database, 'run-schema')).applied.status).toBe('applied');
    const where = await rows<{ table_schema: string; table_name: string }>(
      database,
      sql`SELECT table_schema, table_name FROM information_schema.tables WHERE table_name LIKE 'agent_x402_%' ORDER BY table_name`,
    );
    expect(where).toEqual([
      { table_schema: 'forge_ledger', table_name: 'agent_x402_offers' },
      { table_schema: 'forge_ledger', table_name: 'agent_x402_pnl_daily' },
      { table_schema: 'forge_ledger', table_name: 'agent_x402_transactions' },
    ]);
    const ledger = createLedger(database);
    expect(await ledger.isReady()).toBe(true);
    const reserved = await ledger.reserveOut({
      workflowId: 'pay/schema',
      counterparty: PAYEE,
      resource: 'http://x/r',
      amount: 1n,
      asset: freshAsset(),
      network: NETWORK,
      dailyBudget: 1n,
    });
    expect(reserved).toMatchObject({ ok: true, row: { status: 'reserved', amount: '1' } });
  });
});
