import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import { FailureType } from '../contract/failures';
import { migrationChecksum } from '../contract/hashes';
import type { MigrateSchemaWorkflowInput } from '../contract/migration-runs';
import {
  PAID_ANSWER_SIGNAL,
  type PnlResult,
  type PaymentProbe,
  type PayRequest,
  type SpendLimit,
  type X402PaymentRequired,
  type X402PaymentRequirements,
} from '../contract/pay-runs';
import { choosePayment, type SpendPolicy } from '../x402/spend-policy';
import type * as PayerModule from '../x402/payer';
import type { PaidExchange, SignedPayment } from '../x402/payer';
import type { Ledger } from '../x402/ledger';
import type * as ChainTruthModule from '../x402/chain-truth';
import type { AuthorizationVerdict, CancelOutcome } from '../x402/chain-truth';
import type { Hex } from '../x402/viem';

export type { PaidExchange };

/**
 * The paying side (viem, @x402/evm, @x402/core), loaded by the first payment (see x402/runtime.ts), or ahead of it by a
 * worker restarted with payments in flight (platform/x402-worker.ts).
 */
// eslint-disable-next-line @typescript-eslint/no-require-imports
export const payingSide = (): typeof PayerModule => require('../x402/payer');
// eslint-disable-next-line @typescript-eslint/no-require-imports
const chainTruth = (): typeof ChainTruthModule => require('../x402/chain-truth');

/** What paying needs of the ledger: the outgoing rows, one per pay run. */
type OutgoingLedger = Pick<Ledger, 'isReady' | 'reserveOut' | 'attachNonce' | 'settleOut' | 'failOut' | 'getOut' | 'pnl'>;

export interface PayActivityDeps {
  ledger: OutgoingLedger;
  /** The migration that creates the ledger's tables. */
  ledgerMigration: { name: string; sql: string };
  policy: SpendPolicy;
  /**
   * The wallet's private key, read by the worker from its configuration when a payment is signed: it is never an
   * input or a result of a step, so it never enters a history, a log or a tool's environment.
   */
  walletKey: () => Hex | undefined;
  /** A JSON-RPC endpoint of the chains paid on, to read whether an authorization settled (absent: trust the resource). */
  rpcUrl?: string;
}

export type ReserveOutcome =
  { ok: true; requirement: X402PaymentRequirements } | { ok: false; limit: SpendLimit; reason: string; requirement?: X402PaymentRequirements };

export type RecordOutcome = { status: 'paid'; txHash?: string; reason?: string } | { status: 'failed'; reason: string };

/** One signed authorization as the pay run knows it: enough to ask the chain about it and to cancel it. */
export interface PaymentOnChain {
  requirement: X402PaymentRequirements;
  nonce: Hex;
  payer: string;
  validBefore: number;
}

/** What the chain decided, for the ledger: a settlement (with its transaction) or a failure (with why). */
export type ChainDecision = { status: 'settled'; txHash: string; note?: string } | { status: 'failed'; reason: string };

export type { AuthorizationVerdict, CancelOutcome };

/** A step that cannot succeed by retrying (no wallet configured): the run ends failed with this message. */
const notRetryable = (message: string, type: string) => ApplicationFailure.create({ message, type, nonRetryable: true });

/**
 * PayWorkflow's steps. Each is idempotent under the workflow's retries: the reservation is keyed by the run, the
 * signed payload lives in the run's history once signed and is the only one ever sent, and the outcome is read from
 * the chain when the resource's answer is lost.
 */
export function createPayActivities(deps: PayActivityDeps) {
  return {
    /** Whether the ledger's tables exist; when not, the migration that creates them (the workflow applies it). */
    async x402LedgerReady(): Promise<{ ready: true } | { ready: false; migration: MigrateSchemaWorkflowInput }> {
      if (await deps.ledger.isReady()) return { ready: true };
      const { name, sql } = deps.ledgerMigration;
      return { ready: false, migration: { name, sql, checksum: migrationChecksum(sql) } };
    },

    /** The resource's answer to the unpaid request: its payment terms, or the response when it asks for none. */
    probePayment(request: PayRequest): Promise<PaymentProbe> {
      return payingSide().probePayment(request);
    },

    /**
     * The spend policy, then the rolling daily budget as an atomic reservation in the ledger (one row per run: a
     * retried step finds it and counts it once). A refusal is an answer, not an error: nothing is signed.
     */
    async reservePayment(input: { workflowId: string; url: string; paymentRequired: X402PaymentRequired; maxAmount?: string }): Promise<ReserveOutcome> {
      if (!deps.walletKey()) {
        return {
          ok: false,
          limit: 'wallet',
          reason: 'no wallet is configured: set FORGE_X402_WALLET_KEY or FORGE_X402_WALLET_KEY_FILE on the worker (or FORGE_X402_DEV=1)',
        };
      }
      if (!deps.rpcUrl) {
        return {
          ok: false,
          limit: 'network',
          reason: 'no chain to read: set FORGE_X402_RPC_URL (or FORGE_X402_DEV=1). Forge pays only where it can see on the chain whether a payment settled',
        };
      }
      // The configured network is the chain Forge reads: a payment anywhere else could never be checked or cancelled.
      let configured: string;
      try {
        configured = `eip155:${await chainTruth().chainIdOf(deps.rpcUrl)}`;
      } catch (err) {
        // Nothing is signed yet: a chain out of reach refuses the payment now rather than holding the caller.
        return {
          ok: false,
          limit: 'network',
          reason: `the chain at FORGE_X402_RPC_URL cannot be read (${(err as Error).message.split('\n')[0]}): nothing was signed; try again when it answers`,
        };
      }
      const policy = {
        ...deps.policy,
        allowedNetworks: deps.policy.allowedNetworks.length > 0 ? deps.policy.allowedNetworks.filter((n) => n === configured) : [configured],
      };
      if (policy.allowedNetworks.length === 0) {
        return {
          ok: false,
          limit: 'network',
          reason: `FORGE_X402_ALLOWED_NETWORKS (${deps.policy.allowedNetworks.join(', ')}) does not include ${configured}, the chain FORGE_X402_RPC_URL serves: nothing can be paid`,
        };
      }
      const verdict = choosePayment(input.paymentRequired.accepts, policy, input.maxAmount === undefined ? undefined : BigInt(input.maxAmount));
      if (!verdict.ok) return verdict;
      const { requirement } = verdict;
      const reserved = await deps.ledger.reserveOut({
        workflowId: input.workflowId,
        counterparty: requirement.payTo,
        resource: input.url,
        amount: verdict.amount,
        asset: requirement.asset,
        network: requirement.network,
        dailyBudget: deps.policy.dailyBudget,
      });
      if (!reserved.ok) {
        return {
          ok: false,
          limit: 'dailyBudget',
          requirement,
          reason: `the price ${reserved.amount} would take the last 24 hours' spending to ${BigInt(reserved.spentInWindow) + BigInt(reserved.amount)}, over the daily budget ${reserved.budget} (${reserved.spentInWindow} spent or reserved)`,
        };
      }
      return { ok: true, requirement };
    },

    /**
     * Signs the approved payment once and notes its nonce on the run's ledger row. A retry of this step (its result
     * lost with a worker) signs anew and replaces the nonce: the earlier payload was never sent, since only the one
     * in the run's history ever is.
     */
    async signPayment(input: { workflowId: string; paymentRequired: X402PaymentRequired; requirement: X402PaymentRequirements }): Promise<SignedPayment> {
      const key = deps.walletKey();
      if (!key) throw notRetryable('no wallet is configured on this worker', FailureType.noWallet);
      const row = await deps.ledger.getOut(input.workflowId);
      if (row?.status !== 'reserved') {
        // Reconciliation released it (a run stalled for over an hour): signing now could pay outside the budget.
        throw notRetryable(
          `the reservation is ${row?.status ?? 'gone'}${row?.reason ? ` (${row.reason})` : ''}: nothing was signed`,
          FailureType.reservationReleased,
        );
      }
      let signed;
      try {
        signed = await payingSide().signPayment(key, input.paymentRequired, input.requirement);
      } catch (err) {
        // Signing is local and deterministic: terms it cannot sign now it never will.
        throw notRetryable(`the terms cannot be signed: ${(err as Error).message}`, 'ForgeUnsignableTerms');
      }
      await deps.ledger.attachNonce(input.workflowId, signed.nonce);
      return signed;
    },

    /**
     * Sends the request with the signed payment: the same payload on every try, so no retry can pay twice. A settled
     * answer exists only in this process until Temporal records the result, and a retry cannot get it again (the
     * resource refuses the used payload with 402): so it is first handed to the run as a signal, which the server keeps.
     */
    async sendPayment(input: { request: PayRequest; payment: Pick<SignedPayment, 'headers'> }): Promise<PaidExchange> {
      const exchange = await payingSide().sendPaidRequest(input.request, input.payment);
      if (exchange.settlement?.success) await handToRun(exchange);
      return exchange;
    },

    /**
     * What the chain says of the run's authorization (settled with its transaction, cancelled, open or expired). The
     * seller's claimed transaction is only a hint, checked against the chain. Throws when the chain cannot be read.
     */
    async checkPayment(input: PaymentOnChain & { claimedTx?: string }): Promise<AuthorizationVerdict> {
      const rpcUrl = deps.rpcUrl;
      if (!rpcUrl) throw notRetryable('no chain to read: FORGE_X402_RPC_URL is not set', 'ForgeNoChain');
      const { requirement, nonce, payer, validBefore } = input;
      return chainTruth().readAuthorization(
        rpcUrl,
        { asset: requirement.asset, payTo: requirement.payTo, amount: requirement.amount, payer, nonce, validBefore },
        input.claimedTx,
      );
    },

    /** Cancels the run's authorization on the chain, so that no seller can settle it after Forge gave up on it. */
    async cancelPayment(input: PaymentOnChain): Promise<CancelOutcome> {
      const key = deps.walletKey();
      if (!key || !deps.rpcUrl) return { sent: false, reason: 'no wallet or no chain configured' };
      const { name, version } = input.requirement.extra as { name?: unknown; version?: unknown };
      if (typeof name !== 'string' || typeof version !== 'string')
        return { sent: false, reason: 'the terms name no EIP-712 domain (extra.name, extra.version)' };
      return chainTruth().cancelAuthorization(deps.rpcUrl, key, { asset: input.requirement.asset, nonce: input.nonce }, { name, version });
    },

    /**
     * Writes what the chain decided into the run's ledger row (settled with the chain's transaction, or failed: the
     * reservation released). A row already final keeps its status (an earlier attempt, or reconciliation, decided it).
     */
    async recordDecision(input: { workflowId: string; payer: string; decision: ChainDecision }): Promise<RecordOutcome> {
      const { workflowId, payer, decision } = input;
      if (decision.status === 'settled') {
        const { row } = await deps.ledger.settleOut(workflowId, { txHash: decision.txHash, payer });
        return row.status === 'settled'
          ? { status: 'paid', txHash: row.txHash ?? decision.txHash, reason: decision.note }
          : { status: 'failed', reason: row.reason ?? 'the ledger had already failed this payment' };
      }
      const { row } = await deps.ledger.failOut(workflowId, decision.reason);
      return row.status === 'settled' ? { status: 'paid', txHash: row.txHash ?? undefined } : { status: 'failed', reason: row.reason ?? decision.reason };
    },

    /** The P&L from the ledger's view (empty before the first payment made the ledger). */
    async readPnl(input: { by: 'tool' | 'day' }): Promise<PnlResult> {
      if (!(await deps.ledger.isReady())) return { by: input.by, rows: [], totals: { income: '0', spend: '0', net: '0' }, assets: [] };
      return { by: input.by, ...(await deps.ledger.pnl({ by: input.by })) };
    },

    /** Fails the run's ledger row when the run ends before anything was sent (the reservation is released). */
    async releasePayment(input: { workflowId: string; reason: string }): Promise<void> {
      await deps.ledger.failOut(input.workflowId, input.reason);
    },
  };
}

export type PayActivities = ReturnType<typeof createPayActivities>;

/**
 * Signals the running step's own run with its settled answer. Best effort: outside a worker (a test calling the step
 * directly) or with Temporal out of reach, the answer is still returned, as before.
 */
async function handToRun(exchange: PaidExchange): Promise<void> {
  try {
    const context = Context.current();
    const run = context.info.workflowExecution;
    if (run) await context.client.workflow.getHandle(run.workflowId, run.runId).signal(PAID_ANSWER_SIGNAL, exchange);
  } catch {
    // Nothing to do: the run then relies on this result being recorded, as it did before.
  }
}
