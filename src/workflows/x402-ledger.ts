import { WorkflowExecutionAlreadyStartedError } from '@temporalio/common';
import { ApplicationFailure, executeChild, proxyActivities, sleep, type ActivityOptions } from '@temporalio/workflow';
import type { PayActivities } from '../activities/pay-activities';
import { FailureType } from '../contract/failures';
import type { MigrateSchemaWorkflowInput } from '../contract/migration-runs';
import { ForgeKindKey, ForgeSubjectKey } from '../contract/search-attributes';
import { WORKFLOW_TASK_TIMEOUT } from '../contract/workflow-task-timeout';
import type { migrateSchemaWorkflow } from './migrate-schema';

/**
 * Steps that read or write the ledger: retried without limit (a database that is down makes the run wait, then
 * finish), each bounded well above what one takes.
 */
export const LEDGER_STEP: ActivityOptions = {
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '200 milliseconds', maximumInterval: '10 seconds', nonRetryableErrorTypes: [FailureType.noWallet] },
};

const ledgerSteps = proxyActivities<PayActivities>(LEDGER_STEP);

/**
 * Creates the ledger's tables the first time payments are used: Forge's own migration workflow, as a child run under
 * the migration's usual ID, so the agent's `forge migrations` lists it. Concurrent first payments each try; the ones
 * that find it running wait for the tables.
 */
export async function ensureLedger(): Promise<void> {
  for (let tries = 0; ; tries++) {
    const ready = await ledgerSteps.x402LedgerReady.executeWithOptions({ summary: 'is the x402 ledger there?' }, []);
    if (ready.ready) return;
    if (tries >= 60) throw ApplicationFailure.nonRetryable('the x402 ledger migration did not complete within a minute');
    const migration: MigrateSchemaWorkflowInput = ready.migration;
    try {
      const result = await executeChild<typeof migrateSchemaWorkflow>('migrateSchemaWorkflow', {
        workflowId: `schema-migrate/${migration.name}`,
        args: [migration],
        staticSummary: `Migrate schema: ${migration.name} (the x402 ledger, for the first payment)`,
        // As every run the client starts: a worker killed inside the child's local activities (validate, apply) holds
        // its workflow task until this runs out, and Temporal's default of 10 s was most of such a kill's recovery.
        workflowTaskTimeout: WORKFLOW_TASK_TIMEOUT,
        typedSearchAttributes: [
          { key: ForgeKindKey, value: 'migrate' },
          { key: ForgeSubjectKey, value: migration.name },
        ],
      });
      if (result.status !== 'applied' && result.status !== 'alreadyApplied') {
        throw ApplicationFailure.nonRetryable(`the x402 ledger migration ended ${result.status}: ${result.message}`);
      }
    } catch (err) {
      if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
      await sleep('1 second');
    }
  }
}
