import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { loadConfig } from '../../src/config';
import { createToolStore, type ForgeDatabase } from '../../src/db';
import { startX402Worker, type X402Worker } from '../../src/platform/x402-worker';
import { createLedger } from '../../src/x402/ledger';
import { backendKinds, type TestBackend } from '../db/backends';
import { applyLedgerMigration } from '../helpers/x402-ledger';

/*
 * A restarted worker loads the paying side (viem, @x402/*) before it polls only when it is about to take payments over:
 * rows reserved in the ledger, and a wallet to pay with. Every other worker leaves it to the first payment
 * (test/contract/import-graph.test.ts holds a plain start to that), so its memory and its start pay nothing for it.
 */

const WALLET_KEY = `0x${'11'.repeat(32)}`;

describe.each(backendKinds())('the paying side loaded ahead, on $kind', ({ make }) => {
  let backend: TestBackend;
  let database: ForgeDatabase;
  let home: string;
  const started: X402Worker[] = [];

  const startWorker = (env: Record<string, string>) =>
    startX402Worker({
      // No chain is asked (the decision reads the ledger only), and no seller starts.
      config: loadConfig({ FORGE_HOME: home, FORGE_X402_RPC_URL: 'http://127.0.0.1:9', FORGE_X402_SELL_ADDRESS: 'off', ...env }),
      database,
      store: createToolStore(database),
      log: () => undefined,
    }).then((worker) => (started.push(worker), worker));

  beforeAll(async () => {
    home = mkdtempSync(path.join(tmpdir(), 'forge-load-ahead-'));
    backend = make();
    database = await backend.open();
  }, 60_000);
  afterAll(async () => {
    for (const worker of started) await worker.stop();
    await database?.close();
    await backend?.dispose();
    rmSync(home, { recursive: true, force: true });
  });

  test('no ledger, then a ledger with nothing reserved: not loaded; a payment reserved: loaded, and only with a wallet', async () => {
    const withWallet = await startWorker({ FORGE_X402_WALLET_KEY: WALLET_KEY });
    const withoutWallet = await startWorker({});
    // x402 never used here: no ledger at all.
    await expect(withWallet.loadAheadForPaymentsInFlight()).resolves.toBe(false);

    await applyLedgerMigration(database);
    await expect(withWallet.loadAheadForPaymentsInFlight()).resolves.toBe(false);

    const ledger = createLedger(database);
    const reserved = await ledger.reserveOut({
      workflowId: 'pay/in-flight',
      counterparty: '0x00000000000000000000000000000000000000b0',
      resource: 'http://127.0.0.1:1/report',
      amount: 100n,
      asset: '0x00000000000000000000000000000000000000a0',
      network: 'eip155:31337',
      dailyBudget: 1_000n,
    });
    expect(reserved).toMatchObject({ ok: true, created: true });
    await expect(withWallet.loadAheadForPaymentsInFlight()).resolves.toBe(true);
    // Nothing to pay with: the run's steps refuse without the paying side.
    await expect(withoutWallet.loadAheadForPaymentsInFlight()).resolves.toBe(false);

    // Decided (failed here, settled alike): nothing in flight any more.
    await ledger.failOut('pay/in-flight', 'the test ends it');
    await expect(withWallet.loadAheadForPaymentsInFlight()).resolves.toBe(false);
  }, 60_000);
});
