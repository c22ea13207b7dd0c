import { randomBytes } from 'node:crypto';
import { Client, Connection } from '@temporalio/client';
import { bundleWorkflowCode, NativeConnection, Worker } from '@temporalio/worker';

/**
 * The yardstick of issue 15: a bare Temporal workflow with one no-op local activity, on its own worker in this process
 * and its own task queue, started from a client of the same kind as ForgeClient's (a Client over a Connection) on the
 * same server, and awaited. Forge's orchestration overhead is compared against it, not against Forge itself.
 */
export async function startNoopWorkflow(address: string, namespace = 'default'): Promise<{ run(): Promise<void>; stop(): Promise<void> }> {
  const taskQueue = `bench-noop-${randomBytes(4).toString('hex')}`;
  const workerConnection = await NativeConnection.connect({ address });
  const workflowBundle = await bundleWorkflowCode({
    workflowsPath: require.resolve('./workflow'),
    logger: { log: () => undefined, trace: () => undefined, debug: () => undefined, info: () => undefined, warn: () => undefined, error: () => undefined },
  });
  const worker = await Worker.create({ connection: workerConnection, namespace, taskQueue, workflowBundle, activities: { noop: async () => undefined } });
  const running = worker.run();
  const connection = await Connection.connect({ address });
  const client = new Client({ connection, namespace });
  let n = 0;
  return {
    run: async () => {
      await client.workflow.execute('noopWorkflow', { taskQueue, workflowId: `${taskQueue}-${n++}` });
    },
    stop: async () => {
      worker.shutdown();
      await running;
      await connection.close();
      await workerConnection.close();
    },
  };
}
