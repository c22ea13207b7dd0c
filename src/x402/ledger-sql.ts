/**
 * The x402 ledger's tables (issue 13, AGENT-04), as ONE agent migration. Forge creates them the way the agent would
 * extend its own schema: through MigrateSchemaWorkflow and the schema policy (SCHEMA_POLICY.md), so every name is in
 * the agent namespace and the text holds only what the policy accepts (no functions, triggers or DML). Names are
 * unqualified: the migration runs with `search_path` set to the configured schema (ForgeDatabase.schema), which is
 * where the tables land and where ledger.ts addresses them.
 *
 * Applied migrations never change (same name, other checksum is refused): a change is a new migration with a new name.
 */

/** The migration's name in `forge_migrations` and in its workflow ID (`schema-migrate/forge-x402-ledger-v1`). */
export const LEDGER_MIGRATION_NAME = 'forge-x402-ledger-v1';

/** The relations the migration creates; the ledger is ready when all of them exist. */
export const LEDGER_TABLES = {
  transactions: 'agent_x402_transactions',
  offers: 'agent_x402_offers',
  pnlDaily: 'agent_x402_pnl_daily',
} as const;

// Why each choice:
// - amount numeric(78,0): a uint256 has at most 78 decimal digits, so any EIP-3009 value fits exactly, in base units.
// - payment_nonce is unique per direction, not across both: one payment is an 'out' row in the payer's ledger and an
//   'in' row in the payee's, and when both are this Forge (it buys its own tool, as the tests do) that is two rows of
//   one nonce. Within a direction a nonce is one payment, so a second row of it is refused.
// - workflow_id UNIQUE: one 'out' row per PayWorkflow run (NULLs are distinct, so 'in' rows without one are fine).
// - payer: the address that signed, as the facilitator reported it (our wallet for 'out', the buyer for 'in').
// - status 'reserved' on both sides: an 'out' row before its payment is settled, an 'in' row while the seller settles
//   it (written before the facilitator is asked, so a crash during settlement leaves a row reconciliation finds).
// - The CHECKs hold what the ledger's code relies on, so a row written by hand cannot break the P&L or the budget.
// - The partial indexes serve the two hot reads: the rolling 24 h spend window and the reconciliation scan.
// - The view counts settled rows only, on the day (UTC) they settled: a reservation or a failure moved no money.
export const LEDGER_MIGRATION_SQL = `CREATE TABLE agent_x402_transactions (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  direction text NOT NULL,
  counterparty text NOT NULL,
  resource text NOT NULL,
  tool text,
  amount numeric(78, 0) NOT NULL,
  asset text NOT NULL,
  network text NOT NULL,
  payment_nonce text,
  status text NOT NULL,
  workflow_id text,
  tx_hash text,
  payer text,
  reason text,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  settled_at timestamptz,
  CONSTRAINT agent_x402_transactions_direction_check CHECK (direction IN ('in', 'out')),
  CONSTRAINT agent_x402_transactions_status_check CHECK (status IN ('reserved', 'settled', 'failed')),
  CONSTRAINT agent_x402_transactions_amount_check CHECK (amount >= 0),
  CONSTRAINT agent_x402_transactions_key_check CHECK (
    (direction = 'out' AND workflow_id IS NOT NULL) OR (direction = 'in' AND payment_nonce IS NOT NULL)
  ),
  CONSTRAINT agent_x402_transactions_settled_check CHECK ((status = 'settled') = (settled_at IS NOT NULL)),
  CONSTRAINT agent_x402_transactions_nonce_key UNIQUE (direction, payment_nonce),
  CONSTRAINT agent_x402_transactions_workflow_key UNIQUE (workflow_id)
);

CREATE INDEX agent_x402_transactions_out_window ON agent_x402_transactions (asset, network, created_at)
  WHERE direction = 'out' AND status IN ('reserved', 'settled');

CREATE INDEX agent_x402_transactions_reserved ON agent_x402_transactions (created_at) WHERE status = 'reserved';

CREATE TABLE agent_x402_offers (
  tool text PRIMARY KEY,
  price numeric(78, 0) NOT NULL,
  asset text NOT NULL,
  network text NOT NULL,
  pay_to text NOT NULL,
  description text NOT NULL DEFAULT '',
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT agent_x402_offers_price_check CHECK (price >= 0)
);

CREATE VIEW agent_x402_pnl_daily AS
SELECT (settled_at AT TIME ZONE 'UTC')::date AS day,
       tool,
       asset,
       network,
       coalesce(sum(amount) FILTER (WHERE direction = 'in'), 0) AS income,
       coalesce(sum(amount) FILTER (WHERE direction = 'out'), 0) AS spend,
       coalesce(sum(amount) FILTER (WHERE direction = 'in'), 0) - coalesce(sum(amount) FILTER (WHERE direction = 'out'), 0) AS net,
       count(*) AS settled_count
  FROM agent_x402_transactions
 WHERE status = 'settled'
 GROUP BY 1, tool, asset, network;

COMMENT ON TABLE agent_x402_transactions IS 'x402 payments, in (sold) and out (paid), in base units of the asset: one row per payment';
COMMENT ON TABLE agent_x402_offers IS 'Tools this agent sells over x402, with their price in base units';
COMMENT ON VIEW agent_x402_pnl_daily IS 'Settled x402 income, spend and net by UTC day, tool, asset and network';
`;
